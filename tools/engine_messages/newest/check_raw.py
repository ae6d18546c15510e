#!/usr/bin/env python3
"""Second novelty check on the kept entries, on the raw source rather than the rendering.
The rendered-text filter can call an unchanged wording "new" when only its rendering changed
(e.g. a local variable that now expands differently). For each kept (path, line) this takes the
string-literal parts of the exception message in the 0.34.0 source and reports whether every one
of them also occurs in the 0.33.0 file at the same path (or anywhere in the 0.33.0 tree)."""
import ast, json, os, re, subprocess, sys
sys.path.insert(0, "review"); from keep_newest import KEEP
def lits(node):
    out = []
    for n in ast.walk(node):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.strip():
            out.append(n.value)
    return out
res = {}
for (path, line), cat in KEEP.items():
    src = open(f"src/v34/{path}").read(); tree = ast.parse(src)
    node = None
    for n in ast.walk(tree):
        if isinstance(n, (ast.Raise, ast.Assert)) and n.lineno == line: node = n
    parts = lits(node.exc if isinstance(node, ast.Raise) else node.msg) if node else []
    p33 = f"src/v33/{path}"
    s33 = re.sub(r"\s+", " ", open(p33).read()) if os.path.exists(p33) else ""
    same = bool(parts) and all(re.sub(r"\s+", " ", p) in s33 for p in parts)
    res[f"{path}:{line}"] = {"parts": parts, "file_in_v33": bool(s33), "all_parts_in_same_v33_file": same}
    if same: print("ALL LITERALS ALREADY IN 0.33.0:", path, line, parts)
json.dump(res, open("review/raw_check.json", "w"), indent=1)
print(len(KEEP), "checked")
