"""SGLang's log dialect: the lines it prints at its milestones (python/sglang/srt/managers/scheduler.py,
model_executor/model_runner.py, entrypoints/http_server.py; real logs in tests/data/crashlogs)."""

from __future__ import annotations

import re

from ..base import LogDialect

#: Lines only SGLang prints (paths and message texts), used when the engine is not given.
FINGERPRINT = re.compile(
    r"server_args=ServerArgs|Decode batch[.,]|Prefill batch[.,]|Load weight (?:begin|end)|max_total_num_tokens="
    r"|fired up and ready to roll|Scheduler hit an exception|KV Cache is allocated|Capture (?:piecewise )?cuda graph"
    r"|/sglang/|sglang\.launch_server|sglang serve|Received sigquit|SIGQUIT received|mem-fraction-static"
)
#: The first line of a launch: the server arguments, printed once.
LAUNCH_START = re.compile(r"server_args=ServerArgs\(")
#: Only this line means ready: SGLang's Uvicorn lines come BEFORE its warm-up request.
READY = re.compile(r"The server is fired up and ready to roll")
LOAD_END = re.compile(r"Load weight end\.")
ELAPSED = re.compile(r"elapsed=([\d.]+)\s*s")
MEM_USAGE = re.compile(r"mem usage=([\d.]+)\s*GB")
KV = re.compile(r"KV Cache is allocated\..{0,300}?#tokens: (\d+)")
KV_KV_SIZES = re.compile(r"K size: ([\d.]+) GB, V size: ([\d.]+) GB")
KV_MLA_SIZE = re.compile(r"KV size: ([\d.]+) GB")
MAX_TOTAL = re.compile(r"\bmax_total_num_tokens=(\d+)")
GRAPH_END = re.compile(r"Capture (?:piecewise )?cuda graph end\. Time elapsed: ([\d.]+) s\. mem usage=([\d.]+) GB",
                       re.IGNORECASE)
DECODE = re.compile(r"Decode batch[.,] #running-req: (\d+),")
THROUGHPUT = re.compile(r"gen throughput \(token/s\): ([\d.]+)")
ACCEPT_LEN = re.compile(r"accept len: ([\d.]+)")
ACCEPT_RATE = re.compile(r"accept rate: ([\d.]+)")
QUEUE = re.compile(r"#queue-req: (\d+)")
USAGE = re.compile(r"token usage: ([\d.]+)")

DIALECT = LogDialect(
    fingerprint=FINGERPRINT,
    launch_start=LAUNCH_START,
    ready=(READY,),
    weights_loaded=(LOAD_END,),
    kv_allocated=(KV, MAX_TOTAL),
    decode_stats=(DECODE,),
    uvicorn_means_ready=False,
)
