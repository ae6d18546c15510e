#!/usr/bin/env python3
"""Keyword sweep over the NON-preselected new 0.34.0 candidates (review/rest_new.json)."""
import json, re
PAT = (r"transformers|config\.json|already in use|address in use|\bport\b|nvcc|cuda_home|cuda toolkit|compil|"
       r"out of memory|\bmemory\b|kv cache|kv-cache|gpu_memory_utilization|max_model_len|install|not found|"
       r"no such file|does not exist|safetensors|checkpoint|driver|compute capability|\bsm\d+|nccl|"
       r"hugging ?face|\bhub\b|token|gated|offline|divisible|not supported|unsupported|requires?|"
       r"must be|invalid|expected")
rest = json.load(open("review/rest_new.json"))
hits = [r for r in rest if re.search(PAT, r["message"], re.I)
        and not re.search(r"/tests?/|benchmarks", r["path"])]
with open("review/sweep.txt", "w") as f:
    for i, r in enumerate(hits):
        r["sid"] = f"S{i}"
        f.write(f"[S{i}] {r['path']}:{r['line']} {r['exception']} ({r['scope']}) :: {r['message'][:300]}\n")
json.dump(hits, open("review/sweep.json", "w"))
print(len(rest), len(hits))
