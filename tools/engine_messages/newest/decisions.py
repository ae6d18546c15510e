#!/usr/bin/env python3
"""Write review/decisions_newest.json: every hand-reviewed candidate (the 149 preselected new ones and
the 960 non-preselected new ones, of which the 482 sweep hits were read one by one and the rest skimmed),
keyed by (path, line), with pcat (pre-sort proposal or null), source (pre / rest), keep (category or null)."""
import json, sys, collections
sys.path.insert(0, "review"); from keep_newest import KEEP
pre = json.load(open("review/new.json")); rest = json.load(open("review/rest_new.json"))
sweep = {(r["path"], r["line"]) for r in json.load(open("review/sweep.json"))}
out = []
for r in pre:
    out.append({"path": r["path"], "line": r["line"], "pcat": r["pcat"], "source": "pre",
                "keep": KEEP.get((r["path"], r["line"]))})
for r in rest:
    k = (r["path"], r["line"])
    out.append({"path": r["path"], "line": r["line"], "pcat": None,
                "source": "sweep" if k in sweep else "rest", "keep": KEEP.get(k)})
assert sum(1 for d in out if d["keep"]) == len(KEEP)
json.dump(out, open("review/decisions_newest.json", "w"), indent=0)
t = collections.Counter((d["source"], d["pcat"], d["keep"]) for d in out if d["keep"] or d["source"] == "pre")
rv = collections.Counter(d["pcat"] for d in out if d["source"] == "pre")
kp = collections.Counter(d["pcat"] for d in out if d["source"] == "pre" and d["keep"])
print("pre reviewed per pcat:", dict(rv)); print("pre kept per pcat:", dict(kp))
rel = collections.Counter((d["pcat"], d["keep"]) for d in out if d["source"] == "pre" and d["keep"] and d["keep"] != d["pcat"])
print("relabels:", dict(rel))
print("from non-preselected:", dict(collections.Counter((d["source"], d["keep"]) for d in out if d["source"] != "pre" and d["keep"])))
