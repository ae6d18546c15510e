import json,re,sys
R=[]
def kw(m,pat): return re.search(pat,m,re.I)
def cat(r):
    p=r["path"]; m=r["message"]; e=r["engine"]
    if "/multimodal_gen/" in p or "/test/" in p or "benchmarks" in p or "bench_" in p: return None
    if kw(m,r"divisible") and kw(m,r"tensor|\btp\b|tp_size|tp size|world.?size|parallel") : return "tp_not_divisible"
    if p.startswith(("vllm/config/speculative.py","vllm/v1/spec_decode/","sglang/srt/speculative/")): return "speculative_config_invalid"
    if kw(m,r"specul|eagle|\bmtp\b|nextn|draft model|ngram"):
        if p.endswith(("server_args.py","arg_utils.py")) or p.startswith(("vllm/config/","sglang/srt/arg_groups/")): return "speculative_config_invalid"
    if "/layers/quantization/" in p:
        if kw(m,r"not supported|unsupported|support|requires?|capabilit|minimum|is not available|only|not implemented|install|expected one of|must be one of"): return "quantization_unsupported"
        return None
    if kw(m,r"quantiz") and kw(m,r"not supported|unsupported|does not support|only supports|is not compatible"): return "quantization_unsupported"
    if p.endswith("models/registry.py") or (("/models/" in p) and kw(m,r"architecture|not supported|unsupported|is not yet supported|only supports")): return "unsupported_architecture"
    if kw(m,r"architecture") and kw(m,r"not supported|unsupported|failed to"): return "unsupported_architecture"
    if p.startswith(("vllm/distributed/","sglang/srt/distributed/")) and "kv_transfer" not in p:
        if kw(m,r"nccl|p2p|communicat|timeout|timed out|process group|shm|shared memory|allreduce|rdma|\bib\b|init|connect|peer|cuda ipc|gloo"): return "nccl_error"
        return None
    if kw(m,r"nccl") : return "nccl_error"
    if p.startswith(("vllm/v1/core/kv_cache_utils.py","vllm/worker/","vllm/v1/worker/gpu_worker.py","sglang/srt/mem_cache/memory_pool.py","sglang/srt/model_executor/model_runner","sglang/srt/model_executor/","sglang/srt/mem_cache/kv_cache_configurator.py","sglang/srt/arg_groups/kv_cache_hook.py","vllm/v1/worker/gpu/")) and kw(m,r"memory|kv cache|kv-cache|mem.fraction|max_total_tokens|cache blocks|max_model_len|max seq len|gpu_memory_utilization"): return "kv_cache_insufficient"
    if kw(m,r"kv cache|cache blocks|mem-fraction|mem_fraction") and kw(m,r"not enough|insufficient|no available|larger than|too small|exceed|increase"): return "kv_cache_insufficient"
    if "model_loader" in p and kw(m,r"not found|no such|safetensors|missing|cannot find|could not find|does not exist|no .*files|weights|checkpoint|config|corrupt|header"): return "model_files_missing_or_corrupt"
    if r["exception"]=="ImportError" or kw(m,r"pip install|please install|is not installed|not installed"): return "missing_dependency"
    if kw(m,r"transformers") and kw(m,r"upgrade|version|>=|newer|install"): return "transformers_too_old"
    if kw(m,r"compute capability|cuda version|driver|sm\d\d|hopper|blackwell|ampere") and kw(m,r"not supported|requires?|only|unsupported|at least|minimum"): return "cuda_arch_or_driver"
    if p.endswith(("vllm/engine/arg_utils.py","sglang/srt/server_args.py")) or p.startswith(("vllm/config/","sglang/srt/arg_groups/")): return "bad_argument"
    return None
import os
# (no arguments: the first set's two files and review/, as it was run; the later sets give one file and a folder)
CANDS=[sys.argv[1]] if len(sys.argv)>1 else ["cand_vllm.jsonl","cand_sglang.jsonl"]
OUT=sys.argv[2] if len(sys.argv)>2 else "review"
os.makedirs(OUT,exist_ok=True)
out={}
for cand in CANDS:
    for l in open(cand):
        r=json.loads(l); c=cat(r)
        if c: out.setdefault(c,[]).append(r)
allc=[]
for c,rs in sorted(out.items()):
    with open(f"{OUT}/{c}.txt","w") as f:
        for r in rs:
            i=len(allc); r["id"]=i; r["pcat"]=c; allc.append(r)
            f.write(f"[{i}] {r['engine'][0]} {r['path']}:{r['line']} {r['exception']} ({r['scope']}) :: {r['message'][:300]}\n")
    print(c,len(rs))
json.dump(allc,open(f"{OUT}/all.json","w"))
print(len(allc))
