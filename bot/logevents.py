"""Typed events from the healthy path of an engine log (SGLang and vLLM), for the follower and the diagnoser.

A ``LogReader`` is fed lines as they stream in and returns what they mean: weights loaded (how long, how much),
the KV cache size, CUDA graphs captured, the server ready, periodic decode statistics (running requests,
throughput and, with speculative decoding, accept length / acceptance rate), and error-looking lines. With those the
thread can say "ready in 74 s, KV cache 412k tokens, MTP accept length 1.8".

Real logs carry prefixes that vary by launcher and version; ``normalize_line`` removes them so every pattern here
matches the engine's own message: ANSI colours, docker-compose ``sglang-1  | ``, Ray/vLLM process tags
``(EngineCore_DP0 pid=123)``, ``[rank0]:``, vLLM ``INFO 06-22 02:54:47 [file.py:123]``, SGLang
``[2025-06-19 15:12:27 TP0]``, ISO timestamps, Python-logging and journald prefixes, Ray's
``[repeated 4x across cluster]`` suffix and tqdm carriage-return redraws. The formats quoted in the comments are
from shared/engines/sglang-log-lines.md and vllm-log-lines.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Annotated, Literal, NamedTuple, Union

from pydantic import Field, TypeAdapter

from bot.models import Frozen
from bot.redact import redact

# --------------------------------------------------------------------------------------------- normalisation

# Syslog sinks print the ESC byte as the text "#033" (vllm-project/vllm#1160).
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][A-Za-z0-9]|(?<![\w\]])\[(?:\d{1,3};)*\d{1,3}m"
                   r"|#033\[[0-9;]{0,20}m")
_COMPOSE = re.compile(r"^[A-Za-z0-9][\w.-]*\s+\|\s?")
_PROCESS_TAG = re.compile(r"^\((?:[^()\s]+\s+)?(?:rank=\d+\s+)?pid=\d+(?:,\s*ip=[\d.]+)?\)\s*")
_RANK_TAG = re.compile(r"^\[rank\d+\]:\s?")
_ISO_TS = re.compile(r"^(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d)(?:[.,](\d+))?(?:Z|[+-]\d\d:?\d\d)?\s*")
_SGLANG_TS = re.compile(r"^\[(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:[.,](\d+))?(?:\s+[A-Z]{1,4}\d+)*\]\s*")
_VLLM_LEVEL = re.compile(
    r"^(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+(\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d+))?\s+"
    r"(?:\[[\w./-]+:\d+\]|[\w./-]+:\d+\])\s*"
)
_PY_LEVEL = re.compile(
    r"^-?\s*(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\b(?::\s+|\s+-\s+|\s+)(?:[\w./-]+:\d+(?::|\s+--?)\s+)?"
)
_TORCH_LEVEL = re.compile(r"^\[([WEIF])(?:\d{4}\s[\d:.]+)?\s*[\w./-]*:\d+\]\s*")
_JOURNAL = re.compile(r"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ [\w.@-]+(?:\[\d+\])?:\s")
#: After a timestamp, pipe-separated fields of wrapper loggers: FastChat "| ERROR | stderr |", loguru "| INFO |".
_PIPE_FIELDS = re.compile(r"^\|\s*(?:(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|SUCCESS)\s*\|\s?)?(?:[\w.:<>-]{1,40}\s*\|\s?)?")
_RAY_REPEAT = re.compile(r"(?<!\s)\s*+\[repeated \d+x across cluster\].*$")

_LEVEL_NAMES = {"W": "WARNING", "E": "ERROR", "I": "INFO", "F": "CRITICAL", "WARN": "WARNING"}


class NormalizedLine(NamedTuple):
    """A log line without its prefixes: the engine's message, its level (when a prefix said) and its time."""

    text: str
    level: str | None  # DEBUG / INFO / WARNING / ERROR / CRITICAL, or None when no prefix told
    timestamp: tuple[str, str] | None  # ("full", "2025-06-19 15:12:27.123") or ("md", "06-22 02:54:47")


def strip_ansi(line: str) -> str:
    return _ANSI.sub("", line)


def normalize_line(line: str) -> NormalizedLine:
    """Remove launcher/engine prefixes (stacked in any order) and keep level and timestamp when given."""
    text = strip_ansi(line).lstrip()  # logs pasted into markdown arrive indented
    if "\r" in text:
        # tqdm redraws a bar on one line with carriage returns: the last state is what counts.
        parts = [p for p in text.split("\r") if p.strip()]
        text = parts[-1] if parts else ""
    text = text.rstrip()
    level: str | None = None
    stamp: tuple[str, str] | None = None
    for _ in range(4):  # prefixes stack (compose + Ray tag + vLLM level); a few passes peel them all
        before = text
        for pattern in (_COMPOSE, _PROCESS_TAG, _RANK_TAG, _JOURNAL):
            match = pattern.match(text)
            if match:
                text = text[match.end():]
        match = _SGLANG_TS.match(text) or _ISO_TS.match(text)
        if match:
            stamp = stamp or ("full", f"{match.group(1)} {match.group(2)}.{(match.group(3) or '0'):0<6}")
            text = text[match.end():]
            fields = _PIPE_FIELDS.match(text)
            if fields and fields.end():
                if fields.group(1):
                    level = level or _LEVEL_NAMES.get(fields.group(1), fields.group(1))
                text = text[fields.end():]
        match = _VLLM_LEVEL.match(text)
        if match:
            level = level or _LEVEL_NAMES.get(match.group(1), match.group(1))
            stamp = stamp or ("md", f"{match.group(2)} {match.group(3)}.{(match.group(4) or '0'):0<6}")
            text = text[match.end():]
        else:
            match = _PY_LEVEL.match(text) or _TORCH_LEVEL.match(text)
            if match:
                name = match.group(1)
                level = level or _LEVEL_NAMES.get(name, name)
                text = text[match.end():]
        if text == before:
            break
    text = _RAY_REPEAT.sub("", text)
    return NormalizedLine(text.strip(), level, stamp)


# --------------------------------------------------------------------------------------------- events


class WeightsProgress(Frozen):
    kind: Literal["weights_progress"] = "weights_progress"
    done: int
    total: int


class WeightsLoaded(Frozen):
    kind: Literal["weights_loaded"] = "weights_loaded"
    seconds: float | None = None
    gib: float | None = None  # weight memory per GPU as the engine measured it


class KvCacheAllocated(Frozen):
    kind: Literal["kv_cache_allocated"] = "kv_cache_allocated"
    tokens: int
    gib: float | None = None  # KV cache memory per GPU


class CudaGraphCaptured(Frozen):
    kind: Literal["cuda_graph_captured"] = "cuda_graph_captured"
    seconds: float | None = None
    gib: float | None = None


class ServerReady(Frozen):
    kind: Literal["server_ready"] = "server_ready"
    url: str | None = None


class DecodeStats(Frozen):
    """One periodic statistics line. With speculative decoding the accept figures are set (vLLM prints them on a
    separate line: the reader then emits a second DecodeStats carrying the last throughput plus the accept figures,
    so the latest DecodeStats is always the complete one)."""

    kind: Literal["decode_stats"] = "decode_stats"
    running: int
    throughput_tok_s: float
    accept_len: float | None = None
    accept_rate: float | None = None  # fraction 0..1
    queued: int | None = None
    kv_usage: float | None = None  # fraction 0..1 of the KV cache in use


class ErrorLine(Frozen):
    kind: Literal["error_line"] = "error_line"
    text: str  # the message without prefixes, secrets redacted


LogEvent = Annotated[
    Union[WeightsProgress, WeightsLoaded, KvCacheAllocated, CudaGraphCaptured, ServerReady, DecodeStats, ErrorLine],
    Field(discriminator="kind"),
]
LOG_EVENT_ADAPTER: TypeAdapter[LogEvent] = TypeAdapter(LogEvent)

# --------------------------------------------------------------------------------------------- patterns

# Engine fingerprints: lines only one engine prints (paths and message texts), used when the engine is not given.
SGLANG_MARK = re.compile(
    r"server_args=ServerArgs|Decode batch[.,]|Prefill batch[.,]|Load weight (?:begin|end)|max_total_num_tokens="
    r"|fired up and ready to roll|Scheduler hit an exception|KV Cache is allocated|Capture (?:piecewise )?cuda graph"
    r"|/sglang/|sglang\.launch_server|sglang serve|Received sigquit|SIGQUIT received|mem-fraction-static"
)
VLLM_MARK = re.compile(
    r"vLLM API server version|Initializing an? (?:V1 )?LLM engine|^\((?:APIServer|EngineCore\w*|Worker_TP\d+|VllmWorker"
    r"[\w ]*|VllmWorkerProcess|RayWorkerVllm)\b|GPU KV cache size|Avg generation throughput|Maximum concurrency for"
    r"|init engine \(profile|Starting vLLM|vllm serve|vllm\.entrypoints|/vllm/(?:v1|engine|worker|entrypoints"
    r"|model_executor)/|gpu_memory_utilization"
)

#: The first line of a launch (printed once): a log holding several launches is read from the last one.
LAUNCH_START = re.compile(r"server_args=ServerArgs\(|vLLM API server version|non-default args:")

_WEIGHTS_PROGRESS = re.compile(
    r"(?:Loading (?:safetensors|pt|bin) checkpoint shards|Multi-thread loading shards):\s*(\d+)% Completed\s*\|\s*"
    r"(\d+)/(\d+)"
)
_SGL_LOAD_END = re.compile(r"Load weight end\.")
_SGL_ELAPSED = re.compile(r"elapsed=([\d.]+)\s*s")
_SGL_MEM_USAGE = re.compile(r"mem usage=([\d.]+)\s*GB")
_VLLM_MODEL_LOADING = re.compile(r"Model loading took ([\d.]+) ?(?:GiB|GB)(?: memory)? and ([\d.]+) seconds")
_VLLM_WEIGHTS_TOOK = re.compile(r"Loading weights took ([\d.]+) seconds")
_VLLM_V0_WEIGHTS = re.compile(r"Loading model weights took ([\d.]+) ?(?:GiB|GB)")

_SGL_KV = re.compile(r"KV Cache is allocated\..{0,300}?#tokens: (\d+)")
_SGL_KV_KV_SIZES = re.compile(r"K size: ([\d.]+) GB, V size: ([\d.]+) GB")
_SGL_KV_MLA_SIZE = re.compile(r"KV size: ([\d.]+) GB")
_SGL_MAX_TOTAL = re.compile(r"\bmax_total_num_tokens=(\d+)")
_VLLM_KV_MEMORY = re.compile(r"Available KV cache memory: ([\d.]+) ?GiB")
_VLLM_KV_TOKENS = re.compile(r"GPU KV cache size: ([\d,]+) tokens")
_VLLM_V0_BLOCKS = re.compile(r"(?:GPU|cuda) blocks: (\d+)")
_VLLM_V0_KV_SIZE = re.compile(r"kv_cache_size=([\d.]+) ?GiB")
_VLLM_BLOCK_SIZE = re.compile(r"\bblock_size=(\d+)")

_SGL_GRAPH_END = re.compile(r"Capture (?:piecewise )?cuda graph end\. Time elapsed: ([\d.]+) s\. mem usage=([\d.]+) GB",
                            re.IGNORECASE)
_VLLM_GRAPH_END = re.compile(r"Graph capturing finished in ([\d.]+) secs?, took ([\d.]+) ?GiB")

_SGL_READY = re.compile(r"The server is fired up and ready to roll")
_UVICORN_RUNNING = re.compile(r"Uvicorn running on (https?://\S+)")
_APP_STARTUP = re.compile(r"Application startup complete")
_VLLM_STARTING = re.compile(r"Starting vLLM (?:API )?server(?: \d+)? on (https?://\S+)")
_VLLM_ROUTES = re.compile(r"^Available routes are:")

_SGL_DECODE = re.compile(r"Decode batch[.,] #running-req: (\d+),")
_SGL_THROUGHPUT = re.compile(r"gen throughput \(token/s\): ([\d.]+)")
_SGL_ACCEPT_LEN = re.compile(r"accept len: ([\d.]+)")
_SGL_ACCEPT_RATE = re.compile(r"accept rate: ([\d.]+)")
_SGL_QUEUE = re.compile(r"#queue-req: (\d+)")
_SGL_USAGE = re.compile(r"token usage: ([\d.]+)")
_VLLM_THROUGHPUT = re.compile(r"Avg generation throughput: ([\d.]+) tokens/s, Running: (\d+) reqs")
_VLLM_WAITING = re.compile(r"(?:Waiting|Pending): (\d+) reqs")
_VLLM_KV_USAGE = re.compile(r"GPU KV cache usage: ([\d.]+)%")
_VLLM_SPEC = re.compile(r"(?:SpecDecoding|Speculative) metrics:")
_VLLM_MEAN_ACCEPT = re.compile(r"Mean acceptance length: ([\d.]+)")
_VLLM_ACCEPT_RATE = re.compile(r"(?:Avg )?Draft acceptance rate: ([\d.]+)(%?)")

# Lines that say something went wrong (consumers decide what it means); warnings known to be harmless are excluded.
_ERROR_TEXT = re.compile(
    r"^Traceback \(most recent call last\)|^(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception)\b(?::|$)|^Value error, "
    r"|^Killed\b|\bKilled\s{2,}|CUDA out of memory|Received sigquit|SIGQUIT received|died unexpectedly"
    r"|Engine core initialization failed|Segmentation fault|core dumped|Fatal Python error"
)
_HARMLESS = re.compile(
    r"To silence this warning|Using default MoE kernel config|is not fully optimized yet|If you experience issues"
    r"|If out-of-memory error occurs|deprecated|Ignore import error|will fail at request time"
)


def is_ready_line(line: str, engine: str | None = None) -> bool:
    """Whether this line says the server is ready to serve.

    SGLang: only "The server is fired up and ready to roll!" (its Uvicorn lines come BEFORE the warm-up request, so
    they do not mean ready). vLLM: "Application startup complete." or "Uvicorn running on ...". With ``engine``
    unknown the uvicorn lines count too: a caller that knows the engine is SGLang should say so.
    """
    text = normalize_line(line).text
    if _SGL_READY.search(text):
        return True
    if engine == "sglang":
        return False
    return bool(_APP_STARTUP.search(text) or _UVICORN_RUNNING.search(text))


def detect_engine(text: str) -> str | None:
    """'sglang' or 'vllm' when one engine's fingerprints clearly dominate the text, else None."""
    return detect_engine_of((raw, normalize_line(raw).text) for raw in text.splitlines())


def detect_engine_of(lines: Iterable[tuple[str, str]]) -> str | None:
    """``detect_engine`` over (raw line, normalised text) pairs."""
    sglang = vllm = 0
    for raw, line in lines:
        sglang += bool(SGLANG_MARK.search(line))
        vllm += bool(VLLM_MARK.search(raw) or VLLM_MARK.search(line))
    if sglang > vllm:
        return "sglang"
    if vllm > sglang:
        return "vllm"
    return None


def _gib_from_gb(value: str) -> float:
    # SGLang prints "GB" but computes with 1 << 30 (GiB); the figure is reported as printed.
    return round(float(value), 2)


class LogReader:
    """Stateful reader: feed it lines (in order, as they stream in); it returns the events each line carries.

    TP ranks print the same milestone once each: a milestone event is returned once per launch (a new launch in the
    same log, recognised by its first line, starts over). Decode statistics are returned every time.
    """

    def __init__(self, engine: str | None = None) -> None:
        self.engine = engine
        self._reset()

    def _reset(self) -> None:
        self.url: str | None = None
        self.ready = False
        self._routes_pending = False
        self._weights: WeightsLoaded | None = None
        self._progress: tuple[int, int] | None = None
        self._kv: KvCacheAllocated | None = None
        self._kv_gib_hint: float | None = None
        self._block_size = 16  # vLLM's default block size, used only for V0's "# GPU blocks" line
        self._graph: CudaGraphCaptured | None = None
        self._last_decode: DecodeStats | None = None
        self._last_error: str | None = None

    def feed(self, line: str) -> list[LogEvent]:
        return self.feed_normalized(normalize_line(line), line)

    def feed_normalized(self, norm: NormalizedLine, line: str) -> list[LogEvent]:
        """``feed`` for a caller that has already normalised the line (``line`` is the raw text)."""
        text = norm.text
        if not text:
            return []
        if LAUNCH_START.search(text) and (self._weights or self._kv or self.ready):
            engine = self.engine
            self._reset()
            self.engine = engine
        if self.engine is None:
            if SGLANG_MARK.search(text):
                self.engine = "sglang"
            elif VLLM_MARK.search(line) or VLLM_MARK.search(text):
                self.engine = "vllm"
        events: list[LogEvent] = []
        for reader in (self._weights_events, self._kv_events, self._graph_events, self._ready_events,
                       self._decode_events):
            event = reader(text)
            if event is not None:
                events.append(event)
        if not events:
            error = self._error_event(norm)
            if error is not None:
                events.append(error)
        return events

    # ---------------------------------------------------------------- milestones

    def _weights_events(self, text: str) -> LogEvent | None:
        progress = _WEIGHTS_PROGRESS.search(text)
        if progress:
            state = (int(progress.group(2)), int(progress.group(3)))
            if state == self._progress:
                return None
            self._progress = state
            return WeightsProgress(done=state[0], total=state[1])
        seconds: float | None = None
        gib: float | None = None
        if _SGL_LOAD_END.search(text):
            elapsed, usage = _SGL_ELAPSED.search(text), _SGL_MEM_USAGE.search(text)
            seconds = float(elapsed.group(1)) if elapsed else None
            gib = _gib_from_gb(usage.group(1)) if usage else None
        elif match := _VLLM_MODEL_LOADING.search(text):
            gib, seconds = round(float(match.group(1)), 2), float(match.group(2))
        elif match := _VLLM_WEIGHTS_TOOK.search(text):
            seconds = float(match.group(1))
        elif match := _VLLM_V0_WEIGHTS.search(text):
            gib = round(float(match.group(1)), 2)
        else:
            return None
        previous = self._weights
        merged = WeightsLoaded(
            seconds=seconds if seconds is not None else (previous.seconds if previous else None),
            gib=gib if gib is not None else (previous.gib if previous else None),
        )
        if merged == previous:
            return None  # the same milestone from another TP rank
        self._weights = merged
        return merged

    def _kv_events(self, text: str) -> LogEvent | None:
        tokens: int | None = None
        gib: float | None = None
        if match := _SGL_KV.search(text):
            tokens = int(match.group(1))
            if sizes := _SGL_KV_KV_SIZES.search(text):
                gib = round(float(sizes.group(1)) + float(sizes.group(2)), 2)
            elif size := _SGL_KV_MLA_SIZE.search(text):
                gib = round(float(size.group(1)), 2)
        elif match := _SGL_MAX_TOTAL.search(text):
            tokens = int(match.group(1))
            gib = self._kv.gib if self._kv and self._kv.tokens == tokens else None
        elif match := _VLLM_KV_MEMORY.search(text):
            self._kv_gib_hint = round(float(match.group(1)), 2)
            return None
        elif match := _VLLM_KV_TOKENS.search(text):
            tokens, gib = int(match.group(1).replace(",", "")), self._kv_gib_hint
        elif match := _VLLM_V0_KV_SIZE.search(text):
            self._kv_gib_hint = round(float(match.group(1)), 2)
            return None
        elif match := _VLLM_V0_BLOCKS.search(text):
            tokens, gib = int(match.group(1)) * self._block_size, self._kv_gib_hint
        else:
            if match := _VLLM_BLOCK_SIZE.search(text):
                self._block_size = int(match.group(1))
            return None
        if self._kv is not None and self._kv.tokens == tokens and (gib is None or self._kv.gib == gib):
            return None
        self._kv = KvCacheAllocated(tokens=tokens, gib=gib)
        return self._kv

    def _graph_events(self, text: str) -> LogEvent | None:
        match = _SGL_GRAPH_END.search(text) or _VLLM_GRAPH_END.search(text)
        if not match:
            return None
        event = CudaGraphCaptured(seconds=float(match.group(1)), gib=round(float(match.group(2)), 2))
        if event == self._graph:
            return None
        self._graph = event
        return event

    def _ready_events(self, text: str) -> LogEvent | None:
        if match := (_UVICORN_RUNNING.search(text) or _VLLM_STARTING.search(text)):
            self.url = self.url or match.group(1).rstrip(".,)")
        if self.ready:
            return None
        ready = bool(_SGL_READY.search(text))
        if not ready and self.engine != "sglang":
            if _VLLM_STARTING.search(text):
                self._routes_pending = True
            ready = bool(_APP_STARTUP.search(text) or _UVICORN_RUNNING.search(text)
                         or (self._routes_pending and _VLLM_ROUTES.search(text)))
        if not ready:
            return None
        self.ready = True
        return ServerReady(url=self.url)

    def _decode_events(self, text: str) -> LogEvent | None:
        if match := _SGL_DECODE.search(text):
            throughput = _SGL_THROUGHPUT.search(text)
            if not throughput:
                return None
            accept_len, accept_rate = _SGL_ACCEPT_LEN.search(text), _SGL_ACCEPT_RATE.search(text)
            queue, usage = _SGL_QUEUE.search(text), _SGL_USAGE.search(text)
            stats = DecodeStats(
                running=int(match.group(1)),
                throughput_tok_s=float(throughput.group(1)),
                accept_len=float(accept_len.group(1)) if accept_len else None,
                accept_rate=float(accept_rate.group(1)) if accept_rate else None,
                queued=int(queue.group(1)) if queue else None,
                kv_usage=float(usage.group(1)) if usage else None,
            )
        elif match := _VLLM_THROUGHPUT.search(text):
            waiting, usage = _VLLM_WAITING.search(text), _VLLM_KV_USAGE.search(text)
            stats = DecodeStats(
                running=int(match.group(2)),
                throughput_tok_s=float(match.group(1)),
                queued=int(waiting.group(1)) if waiting else None,
                kv_usage=round(float(usage.group(1)) / 100, 4) if usage else None,
            )
        elif _VLLM_SPEC.search(text):
            mean, rate = _VLLM_MEAN_ACCEPT.search(text), _VLLM_ACCEPT_RATE.search(text)
            if not mean and not rate:
                return None
            rate_value = None
            if rate:
                rate_value = float(rate.group(1)) / (100 if rate.group(2) else 1)
            base = self._last_decode or DecodeStats(running=0, throughput_tok_s=0.0)
            stats = base.model_copy(update={
                "accept_len": float(mean.group(1)) if mean else base.accept_len,
                "accept_rate": round(rate_value, 4) if rate_value is not None else base.accept_rate,
            })
        else:
            return None
        self._last_decode = stats
        return stats

    def _error_event(self, norm: NormalizedLine) -> LogEvent | None:
        text = norm.text
        looks_bad = bool(_ERROR_TEXT.search(text)) or norm.level in ("ERROR", "CRITICAL")
        if not looks_bad or _HARMLESS.search(text) or text == self._last_error:
            return None
        self._last_error = text
        return ErrorLine(text=redact(text[:500]))
