"""SGLang's log dialect: the lines it prints at its milestones (python/sglang/srt/managers/scheduler.py,
model_executor/model_runner.py, entrypoints/http_server.py; formats in tests/data/engines/sglang-log-lines.md, real
logs in tests/data/crashlogs) and the readers of their figures."""

from __future__ import annotations

import re
from typing import Any

from ..logdialect import LogDialect

#: Lines only SGLang prints (paths and message texts), used when the engine is not given.
FINGERPRINT = re.compile(
    r"server_args=(?:ServerArgs|\{')|Decode batch(?: \[\d{1,12}\])?[.,]|Prefill batch(?: \[\d{1,12}\])?[.,]"
    r"|Load weight (?:begin|end)"
    r"|max_total_num_tokens=|fired up and ready to roll|Scheduler hit an exception|KV Cache is allocated"
    r"|Capture (?:[\w-]{1,20} ){0,4}(?:cuda|CUDA) graph"
    r"|/sglang/|sglang\.launch_server|sglang serve|Received sigquit|SIGQUIT received|mem-fraction-static"
)
#: The first line of a launch: the server arguments, printed once.
#: (SGLang 0.5.2x logs the arguments as a dict: sglang/srt/entrypoints/engine.py "server_args={...}" from
#: ServerArgs.resolved_dict(); before, the dataclass's repr "server_args=ServerArgs(...)".)
LAUNCH_START = re.compile(r"server_args=(?:ServerArgs\(|\{)")
#: Only this line means ready: SGLang's Uvicorn lines come BEFORE its warm-up request.
READY = re.compile(r"The server is fired up and ready to roll")
LOAD_END = re.compile(r"Load weight end\.")
ELAPSED = re.compile(r"elapsed=([\d.]+)\s*s")
MEM_USAGE = re.compile(r"mem usage=([\d.]+)\s*GB")
#: SGLang 0.5.2x can size the KV cache after capturing CUDA graphs (sglang/srt/model_executor/model_runner_components/
#: kv_pool_runtime.py: "Post-capture KV sizing: KV cache allocated. dtype: ..., #tokens: N, KV size: ..."); before, and
#: otherwise, mem_cache/memory_pool.py: "KV Cache is allocated. dtype: ..., #tokens: N, ..."
KV = re.compile(r"(?:KV Cache is allocated|Post-capture KV sizing: KV cache allocated)\..{0,300}?#tokens: (\d+)")
KV_KV_SIZES = re.compile(r"K size: ([\d.]+) GB, V size: ([\d.]+) GB")
KV_MLA_SIZE = re.compile(r"KV size: ([\d.]+) GB")
MAX_TOTAL = re.compile(r"\bmax_total_num_tokens=(\d+)")
#: The target model's graphs, in 0.5.x's words ("Capture cuda graph end. Time elapsed: 12.3 s. mem usage=0.5 GB") and
#: 0.5.2x's (model_runner_components/cuda_graph_setup.py: "Capture target decode CUDA graph end. elapsed=12.30 s,
#: mem usage=0.50 GB, avail mem=..."); the drafter's own captures are not the model's.
GRAPH_END = re.compile(r"Capture (?:piecewise |target (?:decode|verify|prefill) )?cuda graph end\. "
                       r"(?:Time elapsed: |elapsed=)([\d.]+) s[.,] mem usage=([\d.]+) GB", re.IGNORECASE)
#: (" [N]", the forward iteration, with SGLANG_LOG_FORWARD_ITERS: scheduler_components/metrics_reporter.py, 0.5.2x)
DECODE = re.compile(r"Decode batch(?: \[\d{1,12}\])?[.,] #running-req: (\d+),")
THROUGHPUT = re.compile(r"gen throughput \(token/s\): ([\d.]+)")
ACCEPT_LEN = re.compile(r"accept len: ([\d.]+)")
ACCEPT_RATE = re.compile(r"accept rate: ([\d.]+)")
QUEUE = re.compile(r"#queue-req: (\d+)")
USAGE = re.compile(r"token usage: ([\d.]+)")


def _gib_from_gb(value: str) -> float:
    # SGLang prints "GB" but computes with 1 << 30 (GiB); the figure is reported as printed.
    return round(float(value), 2)


def read_weights(text: str, memo: dict[str, Any]) -> tuple[float | None, float | None] | None:
    if not LOAD_END.search(text):
        return None
    elapsed, usage = ELAPSED.search(text), MEM_USAGE.search(text)
    return (float(elapsed.group(1)) if elapsed else None), (_gib_from_gb(usage.group(1)) if usage else None)


def read_kv(text: str, memo: dict[str, Any]) -> tuple[int, float | None] | None:
    if match := KV.search(text):
        gib = None
        if sizes := KV_KV_SIZES.search(text):
            gib = round(float(sizes.group(1)) + float(sizes.group(2)), 2)
        elif size := KV_MLA_SIZE.search(text):
            gib = round(float(size.group(1)), 2)
        return int(match.group(1)), gib
    if match := MAX_TOTAL.search(text):
        tokens, last = int(match.group(1)), memo.get("kv")  # the reader keeps the last (tokens, gib) it returned
        return tokens, (last[1] if last and last[0] == tokens else None)
    return None


def read_graph(text: str, memo: dict[str, Any]) -> tuple[float, float] | None:
    match = GRAPH_END.search(text)
    return (float(match.group(1)), round(float(match.group(2)), 2)) if match else None


def read_ready(text: str, memo: dict[str, Any]) -> bool:
    return bool(READY.search(text))


def read_decode(text: str, memo: dict[str, Any]) -> dict[str, Any] | None:
    match = DECODE.search(text)
    throughput = THROUGHPUT.search(text) if match else None
    if not match or not throughput:
        return None
    accept_len, accept_rate = ACCEPT_LEN.search(text), ACCEPT_RATE.search(text)
    queue, usage = QUEUE.search(text), USAGE.search(text)
    return {
        "running": int(match.group(1)),
        "throughput_tok_s": float(throughput.group(1)),
        "accept_len": float(accept_len.group(1)) if accept_len else None,
        "accept_rate": float(accept_rate.group(1)) if accept_rate else None,
        "queued": int(queue.group(1)) if queue else None,
        "kv_usage": float(usage.group(1)) if usage else None,
    }


DIALECT = LogDialect(
    fingerprint=FINGERPRINT,
    launch_start=LAUNCH_START,
    ready=(READY,),
    weights_loaded=(LOAD_END,),
    kv_allocated=(KV, MAX_TOTAL),
    decode_stats=(DECODE,),
    read_weights=read_weights,
    read_kv=read_kv,
    read_graph=read_graph,
    read_ready=read_ready,
    read_decode=read_decode,
)
