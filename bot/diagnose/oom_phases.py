"""Where in the start-up a CUDA out-of-memory struck, and what that makes it: the weights not fitting, the KV cache,
the memory profile, CUDA-graph capture or serving (the taxonomy splits one PyTorch message four ways by phase).

``oom_phase`` (called by ``bot.diagnose.match``) reads the phase from the OOM's own message first, then the traceback
right above it (the most specific phase on the stack wins), then the traceback below it (the one it was chained into,
or its own where a logger printed the message first), then the nearest log line that names one.
"""

from __future__ import annotations

import re

from bot.diagnose.reading import FRAME
from bot.diagnose.rules import PHASE_LOOKAHEAD, PHASE_LOOKBACK
from bot.diagnose.types import LogLine

#: Where a CUDA OOM struck. Inside one traceback the call chain nests the phases (vLLM V1 captures CUDA graphs from
#: within KV-cache setup, V0 profiles by calling execute_model), so the MOST SPECIFIC phase on the stack wins, in this
#: order; outside a traceback, the nearest log line with a marker tells.
_ENGINE_LOOP_GONE = (r"\bMQEngineDeadError\b|\bEngineDeadError\b|\bEngine loop is not running\b|\bBackground loop has errored"
                     r"|\b_log_task_completion\b"
                     # Lines only a running server or generate() call prints, which may come out after the error:
                     # the offline LLM's progress bar (vllm/entrypoints/llm.py _run_engine, tqdm desc "Processed
                     # prompts"; LLM.generate starts only once the engine is built) and V1's AsyncLLM output handler
                     # (vllm/v1/engine/async_llm.py, started once the engine core reported ready: "AsyncLLM
                     # output_handler failed.")
                     r"|\bProcessed prompts:|\boutput_handler failed")

PHASE_MARKERS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("graph", re.compile(
        r"cuda_graph_runner|capture_model|capture_one_batch_size|Capture (?:[\w-]{1,20} ){0,4}cuda graph"
        r"|Capturing batches"
        r"|Capturing (?:CUDA|cuda) ?graphs?|Capturing cudagraphs|Capturing the model for CUDA graphs"
        r"|init_(?:cuda|device)_graphs|graph capture|CUDAGraph|cudagraph"
        # PyTorch's own capture (torch/cuda/graphs.py: torch.cuda.graph's __exit__ -> self.cuda_graph.capture_end())
        # and vLLM's piecewise backend that captures each compiled piece (vllm/compilation/cuda_piecewise_backend.py,
        # piecewise_backend.py)
        r"|torch/cuda/graphs\.py|\bcapture_(?:begin|end)\b|piecewise_backend", re.IGNORECASE)),
    ("profile", re.compile(
        r"profile_run|determine_available_memory|determine_num_available_blocks|Memory profiling|_dummy_sampler_run",
        re.IGNORECASE)),
    ("kv", re.compile(
        r"init_memory_pool|memory_pool\.py|TokenToKVPool|KV Cache is allocated|Memory pool end|_allocate_kv_cache"
        r"|initialize_kv_cache|init_kv_cache|allocate_kv_cache|kv_cache_utils|profile_max_num_token"
        r"|[GXNHCT]PU(?: \+ host)? KV cache size|Available KV cache memory", re.IGNORECASE)),
    ("weights", re.compile(
        r"load_model|load_weights|model_loader|weight_loader|weight_utils|Loading safetensors|Loading pt checkpoint"
        r"|Load weight (?:begin|end)|Loading weights took|Loading model weights|Multi-thread loading shards"
        r"|Starting to load model|create_weights|_initialize_model|ParallelLinear|VocabParallelEmbedding|FusedMoE"
        r"|nn\.ModuleList|linear weights|Model loading took|initialize lk_moe|Failed to initialize \w*moe",
        re.IGNORECASE)),
    ("serving", re.compile(
        r"fired up and ready to roll|Application startup complete|Decode batch(?: \[\d{1,12}\])?[.,]"
        r"|Prefill batch(?: \[\d{1,12}\])?[.,]"
        r"|Avg (?:prompt|generation) throughput|POST /v1/|POST /generate|forward_batch_generation|execute_model"
        r"|run_batch|event_loop_(?:normal|overlap)"
        # (a request's prompt logprobs: vLLM V1 gpu_model_runner.py _get_prompt_logprobs_dict, only for a request;
        # vllm-ascend's model runner preparing the scheduled requests, worker/model_runner_v1.py _process_reqs, which
        # its execute_model calls and its dummy runs do not)
        r"|_get_prompt_logprobs|\b_process_reqs\b"
        # (vLLM V1's engine-core loop runs only once the engine is up)
        r"|run_busy_loop|_process_engine_step"
        # (and the request handlers' modules log only for a request: vllm/entrypoints/openai/serving_*.py)
        r"|\bserving_(?:chat|completion|engine|embedding)\.py:\d"
        r"|" + _ENGINE_LOOP_GONE, re.IGNORECASE)),
)

#: The serving loop's end reported after the error that ended it: V1's EngineDeadError, V0's MQEngineDeadError
#: ("Engine loop is not running") and AsyncLLMEngine's "Background loop has errored" or the done callback of its
#: request loop (vllm/engine/async_llm_engine.py _log_task_completion). None is raised before the server is up.
_ENGINE_LOOP_GONE_RE = re.compile(_ENGINE_LOOP_GONE, re.IGNORECASE)

#: PyTorch's OOM message always mentions "private pools (e.g., CUDA Graphs)": not a sign of graph capture.
OOM_MESSAGE_NOISE = re.compile(r"allocated in private pools \(e\.g\., CUDA Graphs\)", re.IGNORECASE)

#: The phase an OOM message itself names, checked before the surrounding lines.
OOM_MESSAGE_PHASE: tuple[tuple[str, re.Pattern[str]], ...] = (
    # (an OOM quoted by the error that reports the serving loop gone: "MQEngineDeadError: Engine loop is not running.
    # Inspect the stacktrace to find the original error: OutOfMemoryError('CUDA out of memory. ...')")
    ("serving", _ENGINE_LOOP_GONE_RE),
    ("graph", re.compile(r"cuda ?graph|capture", re.IGNORECASE)),
    ("kv", re.compile(r"kv[ _]cache|cache blocks|memory pool", re.IGNORECASE)),
    # vLLM's own message from the memory profile's sampler pass (v1/worker/gpu_model_runner.py _dummy_sampler_run:
    # "CUDA out of memory occurred when warming up sampler with 1024 dummy requests. Please try lowering
    # `max_num_seqs` or `gpu_memory_utilization` ...")
    ("profile", re.compile(r"warming up (?:the )?sampler|\bdummy requests\b", re.IGNORECASE)),
    ("weights", re.compile(r"weights?\b|lk_moe|moe", re.IGNORECASE)),
)

#: Category and advice kind of an OOM in each phase.
OOM_BY_PHASE: dict[str, tuple[str, str | None, str]] = {
    "weights": ("gpu_oom_weights", None, "CUDA out of memory while loading the weights: they do not fit at this TP"),
    "kv": ("kv_cache_insufficient", "lower",
           "CUDA out of memory while allocating the KV cache: the weights loaded, the KV pool did not fit"),
    "profile": ("kv_cache_insufficient", "profile",
                "CUDA out of memory in the memory-profiling pass: weights plus activations for the largest batch do "
                "not fit"),
    "graph": ("cuda_graph_oom", "oom", "CUDA out of memory while capturing CUDA graphs"),
    # (not kv_cache_insufficient, the taxonomy's start-up shortfall: here the pool was allocated and too large)
    "serving": ("other", "runtime",
                "CUDA out of memory while serving, after the server was up: the KV pool leaves too little room for a "
                "batch's activations"),
    "unknown": ("gpu_oom_weights", None, "CUDA out of memory (the phase is not in the log: most often the weights)"),
}

#: Lines that belong to a traceback without being frames: its header, chained-exception notes, elisions.
_STACK_NOISE = re.compile(r"^Traceback \(most recent call last\)|^\.\.\.|^$")


#: Python's line between an exception and the one raised because of it: the traceback after it is the same call
#: chain seen from outside (vLLM's engine core re-raising a worker's OOM from run_busy_loop); and a traceback's own
#: first line right under the message, where a logger printed the message before its traceback (vLLM's worker:
#: "ERROR [multiproc_executor.py:671] RuntimeError: NPU out of memory ...", then "Traceback ...", worker_busy_loop).
_CHAINED = re.compile(r"The above exception was the direct cause of the following exception|During handling of the "
                      r"above exception, another exception occurred|^Traceback \(most recent call last\):$")


_IPYTHON_HEADER = re.compile(r"^\w{1,80}\s{2,}Traceback \(most recent call last\)\s*$")


def _chained_stack(lines: list[LogLine], pos: int) -> list[LogLine]:
    """The frames of the traceback below an OOM at ``pos``: the one it was chained into, or its own where the message
    was logged first; none when no traceback follows."""
    ahead = lines[pos + 1:pos + 4]
    start = next((at for at, line in enumerate(ahead, pos + 1) if _CHAINED.search(line.text)), None)
    if _IPYTHON_HEADER.search(lines[pos].text):
        start = pos  # (IPython prints the exception's class above its frames: "OutOfMemoryError   Traceback ...")
    if start is None:
        return []
    return [line for line in lines[start + 1:start + 1 + PHASE_LOOKBACK]
            if line.code or FRAME.match(line.text)]


def oom_phase(lines: list[LogLine], pos: int) -> tuple[str, LogLine | None, float]:
    """(phase, the line that shows it, confidence) for an OOM at ``pos``."""
    message = OOM_MESSAGE_NOISE.sub("", lines[pos].text)
    for phase, pattern in OOM_MESSAGE_PHASE:
        if pattern.search(message):
            return phase, None, 0.85
    # The traceback right above the error: its frames are the call chain; the most specific phase on it wins.
    stack: list[LogLine] = []
    for back in range(pos - 1, max(-1, pos - PHASE_LOOKBACK - 1), -1):
        line = lines[back]
        if not (line.code or FRAME.match(line.text) or _STACK_NOISE.search(line.text)):
            break
        stack.append(line)
    for phase, pattern in PHASE_MARKERS:
        marker = next((line for line in stack if pattern.search(line.text)), None)
        if marker is not None:
            return phase, marker, 0.85
    chained = _chained_stack(lines, pos)
    for phase, pattern in PHASE_MARKERS:
        marker = next((line for line in chained if pattern.search(line.text)), None)
        if marker is not None:
            return phase, marker, 0.8
    # No traceback: the nearest log line that names a phase (Ray/multi-process logs may print it just after).
    for back in range(pos - 1, max(-1, pos - PHASE_LOOKBACK - 1), -1):
        for phase, pattern in PHASE_MARKERS:
            if pattern.search(lines[back].text):
                return phase, lines[back], 0.75
    for ahead in range(pos + 1, min(len(lines), pos + PHASE_LOOKAHEAD + 1)):
        for phase, pattern in PHASE_MARKERS:
            if pattern.search(lines[ahead].text) and (phase != "serving"
                                                      or _ENGINE_LOOP_GONE_RE.search(lines[ahead].text)):
                return phase, lines[ahead], 0.7
    return "unknown", None, 0.55
