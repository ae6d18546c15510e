"""vLLM's log dialect: the lines it prints at its milestones (vllm/entrypoints/openai/api_server.py,
v1/worker/gpu_model_runner.py, v1/core/kv_cache_utils.py, v1/metrics/loggers.py; real logs in tests/data/crashlogs)."""

from __future__ import annotations

import re

from ..base import LogDialect

#: Lines only vLLM prints (paths, process prefixes and message texts), used when the engine is not given.
FINGERPRINT = re.compile(
    r"vLLM API server version|Initializing an? (?:V1 )?LLM engine|^\((?:APIServer|EngineCore\w*|Worker_TP\d+|VllmWorker"
    r"[\w ]*|VllmWorkerProcess|RayWorkerVllm)\b|GPU KV cache size|Avg generation throughput|Maximum concurrency for"
    r"|init engine \(profile|Starting vLLM|vllm serve|vllm\.entrypoints|/vllm/(?:v1|engine|worker|entrypoints"
    r"|model_executor)/|gpu_memory_utilization"
)
#: The first line of a launch (the version banner; "non-default args:" on releases that print that first).
LAUNCH_START = re.compile(r"vLLM API server version|non-default args:")
MODEL_LOADING = re.compile(r"Model loading took ([\d.]+) ?(?:GiB|GB)(?: memory)? and ([\d.]+) seconds")
WEIGHTS_TOOK = re.compile(r"Loading weights took ([\d.]+) seconds")
V0_WEIGHTS = re.compile(r"Loading model weights took ([\d.]+) ?(?:GiB|GB)")
KV_MEMORY = re.compile(r"Available KV cache memory: ([\d.]+) ?GiB")
KV_TOKENS = re.compile(r"GPU KV cache size: ([\d,]+) tokens")
V0_BLOCKS = re.compile(r"(?:GPU|cuda) blocks: (\d+)")
V0_KV_SIZE = re.compile(r"kv_cache_size=([\d.]+) ?GiB")
BLOCK_SIZE = re.compile(r"\bblock_size=(\d+)")
GRAPH_END = re.compile(r"Graph capturing finished in ([\d.]+) secs?, took ([\d.]+) ?GiB")
STARTING = re.compile(r"Starting vLLM (?:API )?server(?: \d+)? on (https?://\S+)")
ROUTES = re.compile(r"^Available routes are:")
APP_STARTUP = re.compile(r"Application startup complete")
THROUGHPUT = re.compile(r"Avg generation throughput: ([\d.]+) tokens/s, Running: (\d+) reqs")
WAITING = re.compile(r"(?:Waiting|Pending): (\d+) reqs")
KV_USAGE = re.compile(r"GPU KV cache usage: ([\d.]+)%")
SPEC = re.compile(r"(?:SpecDecoding|Speculative) metrics:")
MEAN_ACCEPT = re.compile(r"Mean acceptance length: ([\d.]+)")
ACCEPT_RATE = re.compile(r"(?:Avg )?Draft acceptance rate: ([\d.]+)(%?)")

DIALECT = LogDialect(
    fingerprint=FINGERPRINT,
    launch_start=LAUNCH_START,
    ready=(APP_STARTUP, re.compile(r"Uvicorn running on (https?://\S+)")),
    weights_loaded=(MODEL_LOADING, WEIGHTS_TOOK, V0_WEIGHTS),
    kv_allocated=(KV_TOKENS, V0_BLOCKS),
    decode_stats=(THROUGHPUT, SPEC),
)
