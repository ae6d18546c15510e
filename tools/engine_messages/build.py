import json, collections
dec = json.load(open('decisions.json'))
K = {(d["engine"], d["path"], d["line"]): d["keep"] for d in dec}
PRE = {(d["engine"], d["path"], d["line"]): d["pcat"] for d in dec}
EXTRA = {  # added in second keyword sweep (path, line) -> category
 ("vllm","vllm/model_executor/layers/lightning_attn.py",339): "cuda_arch_or_driver",
 ("sglang","sglang/srt/layers/attention/linear/lightning_attn.py",407): "cuda_arch_or_driver",
 ("vllm","vllm/transformers_utils/config.py",156): "transformers_too_old",
 ("vllm","vllm/transformers_utils/config.py",559): "model_files_missing_or_corrupt",
 ("vllm","vllm/transformers_utils/config.py",581): "model_files_missing_or_corrupt",
 ("vllm","vllm/utils/__init__.py",1021): "bad_argument",
 ("vllm","vllm/utils/__init__.py",1025): "bad_argument",
 ("sglang","sglang/srt/utils/hf_transformers_utils.py",189): "model_files_missing_or_corrupt",
 ("sglang","sglang/srt/server_args_config_parser.py",135): "bad_argument",
 ("sglang","sglang/srt/server_args_config_parser.py",138): "bad_argument",
 ("sglang","sglang/srt/utils/common.py",1758): "cuda_arch_or_driver",
 ("sglang","sglang/srt/utils/common.py",1712): "cuda_arch_or_driver",
 ("sglang","sglang/srt/managers/multimodal_processor.py",52): "unsupported_architecture",
}
for k, v in EXTRA.items():
    K[k] = v
NOTE = {
 "speculative_config_invalid": "speculative-decoding config check",
 "quantization_unsupported": "quant method/scheme/GPU not supported",
 "unsupported_architecture": "model architecture/version not supported",
 "tp_not_divisible": "size not divisible by tensor-parallel size",
 "bad_argument": "invalid or incompatible engine argument",
 "nccl_error": "NCCL / P2P / distributed communication failure",
 "kv_cache_insufficient": "not enough memory for KV/state cache",
 "model_files_missing_or_corrupt": "model weights/config files missing or bad",
 "missing_dependency": "required Python package not installed",
 "transformers_too_old": "transformers too old for this model",
 "cuda_arch_or_driver": "GPU compute capability / driver unsupported",
}
out, seen = [], set()
cnt = collections.Counter(); dup = 0
for e, ver in [("vllm", "0.11.0"), ("sglang", "0.5.9")]:
    for l in open(f"cand_{e}.jsonl"):
        r = json.loads(l)
        key = (e, r["path"], r["line"])
        c = K.get(key)
        if not c:
            continue
        if (e, r["message"]) in seen:
            dup += 1; continue
        seen.add((e, r["message"]))
        where = r["path"].split("/")[-1]
        out.append({"engine": e, "version": ver, "path": r["path"], "line": r["line"],
                    "exception": r["exception"], "message": r["message"], "category": c,
                    "note": f"{NOTE[c]} ({where}{' in ' + r['scope'].split('.')[-1] if r['scope'] else ''})"})
        cnt[(e, c)] += 1
with open("engine_messages.jsonl", "w") as f:
    for o in out:
        f.write(json.dumps(o, ensure_ascii=False) + "\n")
print(len(out), "dups dropped", dup)
for (e, c), n in sorted(cnt.items()):
    print(e, c, n)
# preselect candidate counts per category
pc = collections.Counter(PRE.values())
print("preselected:", dict(pc))
msgs = collections.Counter(o["message"] for o in out)
print("cross-engine identical:", sum(1 for m, n in msgs.items() if n > 1))
