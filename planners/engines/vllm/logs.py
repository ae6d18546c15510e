"""vLLM's log dialect: the lines it prints at its milestones (vllm/entrypoints/openai/api_server.py,
v1/worker/gpu_model_runner.py, v1/core/kv_cache_utils.py, v1/metrics/loggers.py; formats in
tests/data/engines/vllm-log-lines.md, real logs in tests/data/crashlogs) and the readers of their figures."""

from __future__ import annotations

import re
from typing import Any

from ..logdialect import UVICORN_RUNNING, LogDialect

#: Lines only vLLM prints (paths, process prefixes and message texts), used when the engine is not given.
FINGERPRINT = re.compile(
    r"vLLM API server version|Initializing an? (?:V1 )?LLM engine|^\((?:APIServer|EngineCore\w*|Worker_TP\d+|VllmWorker"
    r"[\w ]*|VllmWorkerProcess|RayWorkerVllm)\b|[GXNHCT]PU KV cache size|Avg generation throughput|Maximum concurrency for"
    r"|init engine \(profile|Starting vLLM|vllm serve|vllm\.entrypoints|/vllm/(?:v1|engine|worker|entrypoints"
    r"|model_executor)/|gpu_memory_utilization"
)
#: The first line of a launch (the version banner; "non-default args:" on releases that print that first).
LAUNCH_START = re.compile(r"vLLM API server version|non-default args:")
MODEL_LOADING = re.compile(r"Model loading took ([\d.]+) ?(?:GiB|GB)(?: memory)? and ([\d.]+) seconds")
WEIGHTS_TOOK = re.compile(r"Loading weights took ([\d.]+) seconds")
V0_WEIGHTS = re.compile(r"Loading model weights took ([\d.]+) ?(?:GiB|GB)")
KV_MEMORY = re.compile(r"Available KV cache memory: ([\d.]+) ?GiB")
#: vLLM names the cache's device (vllm/v1/core/kv_cache_utils.py: "%s KV cache size: %s tokens", "GPU" for CUDA, the
#: device type upper-cased otherwise, " + host" with a host-side sparse cache; 0.11 printed "GPU" only).
KV_TOKENS = re.compile(r"(?:GPU|XPU|NPU|HPU|CPU|TPU)(?: \+ host)? KV cache size: ([\d,]+) tokens")
V0_BLOCKS = re.compile(r"(?:GPU|cuda) blocks: (\d+)")
V0_KV_SIZE = re.compile(r"kv_cache_size=([\d.]+) ?GiB")
BLOCK_SIZE = re.compile(r"\bblock_size=(\d+)")
GRAPH_END = re.compile(r"Graph capturing finished in ([\d.]+) secs?, took ([\d.]+) ?GiB")
STARTING = re.compile(r"Starting vLLM (?:API )?server(?: \d+)?(?: \([^)\n]{1,60}\))? on (https?://\S+)")
ROUTES = re.compile(r"^Available routes are:")
APP_STARTUP = re.compile(r"Application startup complete")
THROUGHPUT = re.compile(r"Avg generation throughput: ([\d.]+) tokens/s, Running: (\d+) reqs")
WAITING = re.compile(r"(?:Waiting|Pending): (\d+) reqs")
KV_USAGE = re.compile(r"GPU KV cache usage: ([\d.]+)%")
SPEC = re.compile(r"(?:SpecDecoding|Speculative) metrics:")
MEAN_ACCEPT = re.compile(r"Mean acceptance length: ([\d.]+)")
ACCEPT_RATE = re.compile(r"(?:Avg )?Draft acceptance rate: ([\d.]+)(%?)")
#: vLLM's block size when the log does not say (used only for V0's "# GPU blocks" line).
DEFAULT_BLOCK_SIZE = 16


def read_weights(text: str, memo: dict[str, Any]) -> tuple[float | None, float | None] | None:
    if match := MODEL_LOADING.search(text):
        return float(match.group(2)), round(float(match.group(1)), 2)
    if match := WEIGHTS_TOOK.search(text):
        return float(match.group(1)), None
    if match := V0_WEIGHTS.search(text):
        return None, round(float(match.group(1)), 2)
    return None


def read_kv(text: str, memo: dict[str, Any]) -> tuple[int, float | None] | None:
    """The KV size in tokens; the memory comes on an earlier line (a hint kept in memo)."""
    if match := KV_MEMORY.search(text) or V0_KV_SIZE.search(text):
        memo["kv_gib_hint"] = round(float(match.group(1)), 2)
        return None
    # (a cache of 0 tokens / 0 blocks is no allocation: the profile left nothing, and the error follows)
    if match := KV_TOKENS.search(text):
        tokens = int(match.group(1).replace(",", ""))
        return (tokens, memo.get("kv_gib_hint")) if tokens else None
    if match := V0_BLOCKS.search(text):
        blocks = int(match.group(1))
        return (blocks * memo.get("block_size", DEFAULT_BLOCK_SIZE), memo.get("kv_gib_hint")) if blocks else None
    if match := BLOCK_SIZE.search(text):
        memo["block_size"] = int(match.group(1))
    return None


def read_graph(text: str, memo: dict[str, Any]) -> tuple[float, float] | None:
    match = GRAPH_END.search(text)
    return (float(match.group(1)), round(float(match.group(2)), 2)) if match else None


def read_ready(text: str, memo: dict[str, Any]) -> bool:
    """"Application startup complete." / Uvicorn's line; or the route list after "Starting vLLM API server"."""
    if STARTING.search(text):
        memo["routes_pending"] = True
    return bool(APP_STARTUP.search(text) or UVICORN_RUNNING.search(text)
                or (memo.get("routes_pending") and ROUTES.search(text)))


def read_decode(text: str, memo: dict[str, Any]) -> dict[str, Any] | None:
    """The periodic stats line; the speculative metrics come on their own line and complete the last one."""
    if match := THROUGHPUT.search(text):
        waiting, usage = WAITING.search(text), KV_USAGE.search(text)
        return {
            "running": int(match.group(2)),
            "throughput_tok_s": float(match.group(1)),
            "queued": int(waiting.group(1)) if waiting else None,
            "kv_usage": round(float(usage.group(1)) / 100, 4) if usage else None,
        }
    if not SPEC.search(text):
        return None
    mean, rate = MEAN_ACCEPT.search(text), ACCEPT_RATE.search(text)
    if not mean and not rate:
        return None
    update: dict[str, Any] = {"merge": True}
    if mean:
        update["accept_len"] = float(mean.group(1))
    if rate:
        update["accept_rate"] = round(float(rate.group(1)) / (100 if rate.group(2) else 1), 4)
    return update


DIALECT = LogDialect(
    fingerprint=FINGERPRINT,
    fingerprint_raw=True,
    launch_start=LAUNCH_START,
    ready=(APP_STARTUP, UVICORN_RUNNING),
    weights_loaded=(MODEL_LOADING, WEIGHTS_TOOK, V0_WEIGHTS),
    kv_allocated=(KV_TOKENS, V0_BLOCKS),
    decode_stats=(THROUGHPUT, SPEC),
    uvicorn_means_ready=True,
    url=STARTING,
    read_weights=read_weights,
    read_kv=read_kv,
    read_graph=read_graph,
    read_ready=read_ready,
    read_decode=read_decode,
)
