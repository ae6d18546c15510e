#!/usr/bin/env python3
"""Join review/keep_newest.py with the 0.34.0 candidates and write engine_messages_newest.jsonl.
Asserts: every kept message is new (normalised text not in engine_messages.jsonl,
engine_messages_newer.jsonl or any 0.33.0 candidate) and no two kept messages repeat."""
import json, re, sys, collections, os
sys.path.insert(0, "review"); from keep_newest import KEEP
D = "/work/main/tests/data/engine_messages/"
def norm(m): return re.sub(r"\s+", "", re.sub(r"\d", "", m.lower()))
seen_old = {norm(json.loads(l)["message"]) for f in ("engine_messages.jsonl", "engine_messages_newer.jsonl") for l in open(D + f)}
v33 = {norm(json.loads(l)["message"]) for l in open("cand_vllm33.jsonl")}
NOTE = {
 "quantization_unsupported": "quant method/scheme/GPU not supported",
 "kv_cache_insufficient": "not enough memory for KV/state cache",
 "speculative_config_invalid": "speculative-decoding config check",
 "bad_argument": "invalid or incompatible engine argument",
 "missing_dependency": "required Python package not installed",
 "tp_not_divisible": "size not divisible by tensor-parallel size",
 "nccl_error": "NCCL / P2P / distributed communication failure",
 "cuda_arch_or_driver": "GPU compute capability / driver unsupported",
 "model_files_missing_or_corrupt": "model weights/config files missing or bad",
 "unsupported_architecture": "model architecture/version not supported",
}
cands = {(r["path"], r["line"]): r for r in map(json.loads, open("cand_vllm.jsonl"))}
out, seen = [], set()
for key, cat in KEEP.items():
    r = cands[key]
    n = norm(r["message"])
    assert n not in seen_old and n not in v33, key
    assert n not in seen, key
    seen.add(n)
    func = r["scope"].split(".")[-1] if r["scope"] else "<module>"
    out.append({"engine": "vllm", "version": "0.34.0", "path": r["path"], "line": r["line"],
                "exception": r["exception"], "message": r["message"], "category": cat,
                "note": f"{NOTE[cat]} ({os.path.basename(r['path'])} in {func})"})
out.sort(key=lambda r: (r["path"], r["line"]))
with open("engine_messages_newest.jsonl", "w") as f:
    for r in out: f.write(json.dumps(r, ensure_ascii=False) + "\n")
c = collections.Counter(r["category"] for r in out)
e = collections.Counter(r["exception"] for r in out)
print(len(out)); print(dict(c.most_common())); print(dict(e.most_common()))
