#!/usr/bin/env python3
"""Extract error messages from inference-engine Python sources.

Usage: python3 extract.py SRC_ROOT ENGINE VERSION > candidates.jsonl

Walks every .py file under SRC_ROOT (the unzipped wheel), and collects
  raise ValueError/NotImplementedError/RuntimeError/AssertionError/
        TypeError/KeyError/ImportError(<message>)
  assert cond, <message>
where <message> is a string constant, an f-string, a "..." + "..." concat,
implicit concatenation, or "...".format(...) / "..." % (...).
f-string placeholders are replaced by a deterministic sample value chosen
from the placeholder expression's text (see sample_for()).
"""
import ast
import json
import os
import re
import sys

EXC = {"ValueError", "NotImplementedError", "RuntimeError", "AssertionError",
       "TypeError", "KeyError", "ImportError"}


def expr_text(node):
    try:
        return ast.unparse(node)
    except Exception:
        return "x"


def sample_for(text):
    """Deterministic plausible value for a placeholder expression text."""
    t = text.lower()
    last = re.split(r"[.\[\]()'\" ,]+", t.strip("()[]' \""))
    last = [p for p in last if p]
    name = last[-1] if last else t
    rules = [
        (r"gpu_name|device_name", "NVIDIA A10G"),
        (r"tf_version|transformers|^installed$", "4.45.0"),
        (r"^required", "4.57.0.dev0"),
        (r"supported_versions", "2.0, 2.5, 2.6, 4.0, 4.5"),
        (r"previous_version", "0.10.2"),
        (r"supported_arch|all_arch|registered|all_supported|supported_models", "['LlamaForCausalLM', 'Qwen2ForCausalLM', 'MistralForCausalLM']"),
        (r"architectures$", "['Qwen3NextForCausalLM']"),
        (r"error_str|nccl.*err", "unhandled system error (run with NCCL_DEBUG=INFO for details)"),
        (r"^(e|ex|exc|err|error|.*_err|.*_error|.*exception)$", "No module named 'ray'"),
        (r"min_capability|minimum_capability|min_cap", "89"),
        (r"capability|capab|\bcc\b", "86"),
        (r"version_str", "8.6"),
        (r"compute_str", "has compute capability 7.5"),
        (r"model_type", "qwen3"),
        (r"arch", "Qwen3ForCausalLM"),
        (r"model_cls|model_class|cls\.__name__|__class__\.__name__|__name__", "Qwen3ForCausalLM"),
        (r"model_path|model_name|^model$|repo|model_id|model_or_path", "Qwen/Qwen3-8B"),
        (r"kv_cache_dtype", "fp8_e5m2"),
        (r"quant|scheme|method", "fp8"),
        (r"dtype", "fp8"),
        (r"device", "cuda"),
        (r"backend", "flashinfer"),
        (r"algorithm|spec.*alg", "EAGLE"),
        (r"path|file|dir|filename", "/models/Qwen3-8B/model.safetensors"),
        (r"kv_heads", "4"),
        (r"heads", "28"),
        (r"expert", "60"),
        (r"vocab", "151936"),
        (r"per_partition", "1376"),
        (r"min_thread_n", "64"),
        (r"min_thread_k|group_size", "128"),
        (r"bits", "3"),
        (r"page_size", "16"),
        (r"memory_utilization|mem_fraction|utilization|ratio", "0.9"),
        (r"gib|memory|mem\b|bytes", "12.5"),
        (r"max_model_len|seq_len|model_len|max_len", "131072"),
        (r"batched_tokens|chunked_prefill", "8192"),
        (r"^tp$|^tp_|_tp$|_tp_|tensor_parallel|tp_size|world_size", "8"),
        (r"^ep$|ep_size|expert_parallel", "4"),
        (r"^dp$|dp_size|data_parallel", "2"),
        (r"^pp$|pp_size|pipeline", "2"),
        (r"num_|size|len|count|dim|block|rank|step|token|max|min|layer|\bn\b|_n\b|index|idx", "8"),
        (r"version", "4.45.0"),
        (r"shape", "(8, 4096)"),
        (r"\bport\b|_port$|^port", "30000"),
        (r"host|addr|\bip\b", "127.0.0.1"),
        (r"name|key|type|mode|kind|format|str", "fp8"),
    ]
    for pat, val in rules:
        if re.search(pat, name):
            return val
    for pat, val in rules:
        if re.search(pat, t):
            return val
    return "8"


LOCALS = [{}]


def render(node, depth=0):
    """Return rendered string for a message node, or None if not stringy."""
    if isinstance(node, ast.Name) and depth < 3 and node.id in LOCALS[-1]:
        return render(LOCALS[-1][node.id], depth + 1)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        out = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                out.append(str(v.value))
            elif isinstance(v, ast.FormattedValue):
                sub = render(v.value, depth + 1) if isinstance(v.value, ast.Name) else None
                out.append(sub if sub is not None else sample_for(expr_text(v.value)))
        return "".join(out)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        a, b = render(node.left, depth + 1), render(node.right, depth + 1)
        if a is None and b is None:
            return None
        return (a if a is not None else sample_for(expr_text(node.left))) + \
               (b if b is not None else sample_for(expr_text(node.right)))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        fmt = render(node.left, depth + 1)
        if fmt is None:
            return None
        args = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
        vals = iter([sample_for(expr_text(a)) for a in args])
        return re.sub(r"%[-#0 +]*\d*(?:\.\d+)?[sdrfigx]",
                      lambda m: next(vals, "8"), fmt)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "format"):
        fmt = render(node.func.value, depth + 1)
        if fmt is None:
            return None
        pos = [sample_for(expr_text(a)) for a in node.args]
        kw = {k.arg: sample_for(expr_text(k.value)) for k in node.keywords if k.arg}
        it = iter(pos)

        def rep(m):
            f = m.group(1)
            if f == "":
                return next(it, "8")
            if f.isdigit():
                i = int(f)
                return pos[i] if i < len(pos) else "8"
            return kw.get(f.split(".")[0].split("[")[0], sample_for(f))
        return re.sub(r"\{([^{}:!]*)(?:[:!][^{}]*)?\}", rep, fmt)
    return None


class MultiArg:
    def __init__(self, args):
        self.args = args

    def render(self):
        parts = []
        for a in self.args:
            r = render(a)
            if r is not None:
                parts.append(repr(r))
            else:
                v = sample_for(expr_text(a))
                parts.append(v if re.fullmatch(r"[0-9.]+", v) else repr(v))
        return "(" + ", ".join(parts) + ")"


class V(ast.NodeVisitor):
    def __init__(self, relpath, lines):
        self.rel = relpath
        self.lines = lines
        self.func = []
        self.out = []

    def visit_FunctionDef(self, node):
        self.func.append(node.name)
        LOCALS.append({})
        self.generic_visit(node)
        LOCALS.pop()
        self.func.pop()

    def visit_Assign(self, node):
        # remember `name = "..."` / f"..." so a later f"{name}" renders it
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if render(node.value, 3) is not None:
                LOCALS[-1][node.targets[0].id] = node.value
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        self.func.append(node.name)
        self.generic_visit(node)
        self.func.pop()

    def add(self, exc, msgnode, node, cond=None):
        msg = msgnode.render() if isinstance(msgnode, MultiArg) else render(msgnode)
        if msg is None:
            return
        msg = re.sub(r"\s+", " ", msg).strip()
        if not msg:
            return
        lo = max(0, node.lineno - 4)
        hi = min(len(self.lines), getattr(node, "end_lineno", node.lineno) + 1)
        self.out.append({
            "path": self.rel, "line": node.lineno, "exception": exc,
            "message": msg, "scope": ".".join(self.func),
            "cond": cond, "context": "\n".join(self.lines[lo:hi]),
        })

    def visit_Raise(self, node):
        e = node.exc
        if isinstance(e, ast.Call):
            f = e.func
            name = f.id if isinstance(f, ast.Name) else (f.attr if isinstance(f, ast.Attribute) else None)
            if name in EXC and len(e.args) == 1:
                self.add(name, e.args[0], node)
            elif name in EXC and len(e.args) > 1 and render(e.args[0]) is not None:
                # str(Exc(a, b)) prints the args tuple; render it that way
                self.add(name, MultiArg(e.args), node)
        self.generic_visit(node)

    def visit_Assert(self, node):
        if node.msg is not None:
            self.add("AssertionError", node.msg, node, cond=expr_text(node.test))
        self.generic_visit(node)


def main():
    root, engine, version = sys.argv[1:4]
    for dp, dns, fns in os.walk(root):
        dns.sort()
        for fn in sorted(fns):
            if not fn.endswith(".py"):
                continue
            full = os.path.join(dp, fn)
            rel = os.path.relpath(full, root)
            try:
                src = open(full, encoding="utf-8-sig").read()
                tree = ast.parse(src)
            except Exception as ex:  # noqa
                print(f"skip {rel}: {ex}", file=sys.stderr)
                continue
            v = V(rel, src.splitlines())
            v.visit(tree)
            for r in v.out:
                r = {"engine": engine, "version": version, **r}
                print(json.dumps(r, ensure_ascii=False))


if __name__ == "__main__":
    main()
