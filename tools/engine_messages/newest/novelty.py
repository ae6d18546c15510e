#!/usr/bin/env python3
"""Novelty filter for vLLM 0.34.0 candidates.

norm(msg) = lowercase, digits removed, whitespace runs removed (as the newer set's novelty.py).
A 0.34.0 candidate is dropped when norm(message) equals
  (a) a message of engine_messages.jsonl (old corpus) or engine_messages_newer.jsonl, or
  (b) a message of ANY raw 0.33.0 candidate (cand_vllm33.jsonl): the wording is not new in 0.34.0.
Then repeats within 0.34.0 (same norm) are collapsed to the first occurrence.
Writes review/new.json (preselected, new) and review/new_<cat>.txt, and review/rest_new.json
(non-preselected, new; for the keyword sweep).
"""
import json, re, collections
D = "/work/main/tests/data/engine_messages/"
def norm(m): return re.sub(r"\s+", "", re.sub(r"\d", "", m.lower()))
old = {norm(json.loads(l)["message"]) for l in open(D + "engine_messages.jsonl")}
newer = {norm(json.loads(l)["message"]) for l in open(D + "engine_messages_newer.jsonl")}
v33 = {norm(json.loads(l)["message"]) for l in open("cand_vllm33.jsonl")}
cands = [json.loads(l) for l in open("cand_vllm.jsonl")]
pre = json.load(open("review/all.json"))
prekey = {(r["path"], r["line"], r["message"]): r for r in pre}
st = collections.Counter()
seen = set(); new_pre = []; rest = []
for r in cands:
    n = norm(r["message"]); st["raw"] += 1
    if n in old: st["in_old_corpus"] += 1; continue
    if n in newer: st["in_newer_corpus"] += 1; continue
    st["not_in_sets"] += 1
    p = prekey.get((r["path"], r["line"], r["message"]))
    if p: st["pre_not_in_sets"] += 1
    if n in v33:
        st["in_v33_source"] += 1
        if p: st["pre_in_v33_source"] += 1
        continue
    st["new_wording"] += 1
    if n in seen:
        st["dup_within"] += 1
        if p: st["pre_dup_within"] += 1
        continue
    seen.add(n)
    if p: new_pre.append(p)
    else: rest.append(r)
st["pre_new_reviewed"] = len(new_pre); st["rest_new"] = len(rest)
json.dump(new_pre, open("review/new.json", "w"))
json.dump(rest, open("review/rest_new.json", "w"))
bycat = collections.defaultdict(list)
for r in new_pre: bycat[r["pcat"]].append(r)
for c, rs in sorted(bycat.items()):
    with open(f"review/new_{c}.txt", "w") as f:
        for r in rs:
            f.write(f"[{r['id']}] {r['path']}:{r['line']} {r['exception']} ({r['scope']}) :: {r['message'][:400]}\n")
    print(c, len(rs))
for k, v in st.items(): print(k, v)
json.dump(st, open("review/novelty_stats.json", "w"), indent=1)
