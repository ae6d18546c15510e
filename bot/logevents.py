"""Typed events from the healthy path of an engine log, for the follower and the diagnoser.

Each engine's own lines are its log dialect (planners/engines/<name>/logs.py); this module normalises lines, turns
what a dialect reads into events, and tells engines apart by their fingerprints when nobody said which one ran.

A ``LogReader`` is fed lines as they stream in and returns what they mean: weights loaded (how long, how much),
the KV cache size, CUDA graphs captured, the server ready, periodic decode statistics (running requests,
throughput and, with speculative decoding, accept length / acceptance rate), and error-looking lines. With those the
thread can say "ready in 74 s, KV cache 412k tokens, MTP accept length 1.8".

Every pattern here matches the engine's own message: ``normalize_line`` (bot/lognorm.py, re-exported here) takes the
launchers' and loggers' prefixes off first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Annotated, Literal, Union

from pydantic import Field, TypeAdapter

from bot.models import Frozen
from bot.redact import redact
from planners.engines import registry
from planners.engines.logdialect import LogDialect

from bot.lognorm import NormalizedLine, normalize_line
# (the follower's and older callers' names, re-exported; the diagnoser imports bot.lognorm itself)
from bot.lognorm import PROCESS_TAG, RANK_TAG, strip_ansi  # noqa: F401

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

# Each engine's own lines (ready, weights, KV, CUDA graphs, decode statistics, fingerprints) are its dialect,
# planners/engines/<name>/logs.py; only what every engine's log shares is here.

#: The safetensors/tqdm loader's progress bar, printed the same by every Python engine.
_WEIGHTS_PROGRESS = re.compile(
    r"(?:Loading (?:safetensors|pt|bin) checkpoint shards|Multi-thread loading shards):\s*(\d+)% Completed\s*\|\s*"
    r"(\d+)/(\d+)"
)

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


def _dialects(engine: str | None) -> tuple[LogDialect, ...]:
    """The named engine's dialect; every registered engine's when the engine is not known."""
    known = registry.find(engine)
    return (known.dialect,) if known is not None else tuple(e.dialect for e in registry.engines())


def is_launch_start(text: str) -> bool:
    """The first line of a launch (any engine's): a log holding several launches is read from the last one."""
    return any(d.launch_start is not None and d.launch_start.search(text) for d in _dialects(None))


#: The built-in engines' launch lines as one pattern, for readers that search with a pattern (bot/diagnose/match.py).
LAUNCH_START = re.compile("|".join(d.launch_start.pattern for d in _dialects(None) if d.launch_start is not None))


def is_ready_line(line: str, engine: str | None = None) -> bool:
    """Whether this line says the server is ready to serve, in the engine's own words (planners/engines/*/logs.py).

    SGLang: only "The server is fired up and ready to roll!" (its Uvicorn lines come BEFORE the warm-up request, so
    they do not mean ready). vLLM: "Application startup complete." or "Uvicorn running on ...". With ``engine``
    unknown every engine's words count: a caller that knows the engine is SGLang should say so.
    """
    text = normalize_line(line).text
    return any(d.is_ready(text, {}) for d in _dialects(engine))


def detect_engine(text: str) -> str | None:
    """The engine whose fingerprints clearly dominate the text, else None."""
    return detect_engine_of((raw, normalize_line(raw).text) for raw in text.splitlines())


def detect_engine_of(lines: Iterable[tuple[str, str]]) -> str | None:
    """``detect_engine`` over (raw line, normalised text) pairs."""
    engines = registry.engines()
    counts = [0] * len(engines)
    for raw, line in lines:
        for i, engine in enumerate(engines):
            counts[i] += engine.dialect.wrote(line, raw)
    best = max(counts, default=0)
    if best == 0 or counts.count(best) > 1:
        return None
    return engines[counts.index(best)].name


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
        # every engine's figures are read whichever engine runs (a mislabelled or mixed log loses nothing); only
        # what "ready" means is the running engine's own
        self._all = _dialects(None)
        self._readers = {read: tuple(getattr(d, read) for d in self._all) for read in ("weights", "kv", "graph", "decode")}
        self._dialects = _dialects(self.engine)
        self._memo: dict[str, object] = {}  # the dialects' scratch for this launch (hints a later line completes)
        self._weights: WeightsLoaded | None = None
        self._progress: tuple[int, int] | None = None
        self._kv: KvCacheAllocated | None = None
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
        if (self._weights or self._kv or self.ready) and any(
            d.launch_start is not None and d.launch_start.search(text) for d in self._all
        ):
            self._reset()
        if self.engine is None:
            found = next((e for e in registry.engines() if e.dialect.wrote(text, line)), None)
            if found is not None:
                self.engine = found.name
                self._dialects = (found.dialect,)
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

    def _first(self, read: str, text: str) -> object:
        """The first dialect's figures for this line (``read``: weights / kv / graph / decode)."""
        memo = self._memo
        for reader in self._readers[read]:
            found = reader(text, memo)
            if found is not None:
                return found
        return None

    # ---------------------------------------------------------------- milestones

    def _weights_events(self, text: str) -> LogEvent | None:
        progress = _WEIGHTS_PROGRESS.search(text)
        if progress:
            state = (int(progress.group(2)), int(progress.group(3)))
            if state == self._progress:
                return None
            self._progress = state
            return WeightsProgress(done=state[0], total=state[1])
        found = self._first("weights", text)
        if found is None:
            return None
        seconds, gib = found  # type: ignore[misc]
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
        found = self._first("kv", text)
        if found is None:
            return None
        tokens, gib = found  # type: ignore[misc]
        if self._kv is not None and self._kv.tokens == tokens and (gib is None or self._kv.gib == gib):
            return None
        self._kv = KvCacheAllocated(tokens=tokens, gib=gib)
        self._memo["kv"] = (tokens, gib)
        return self._kv

    def _graph_events(self, text: str) -> LogEvent | None:
        found = self._first("graph", text)
        if found is None:
            return None
        seconds, gib = found  # type: ignore[misc]
        event = CudaGraphCaptured(seconds=seconds, gib=gib)
        if event == self._graph:
            return None
        self._graph = event
        return event

    def _ready_events(self, text: str) -> LogEvent | None:
        if self.url is None:
            self.url = next((u for u in (d.url_in(text) for d in self._dialects) if u), None)
        if self.ready:
            return None
        if not any(d.is_ready(text, self._memo) for d in self._dialects):
            return None
        self.ready = True
        return ServerReady(url=self.url)

    def _decode_events(self, text: str) -> LogEvent | None:
        found = self._first("decode", text)
        if found is None:
            return None
        fields = dict(found)  # type: ignore[call-overload]
        if fields.pop("merge", False):
            base = self._last_decode or DecodeStats(running=0, throughput_tok_s=0.0)
            stats = base.model_copy(update=fields)
        else:
            stats = DecodeStats(**fields)
        self._last_decode = stats
        return stats

    def _error_event(self, norm: NormalizedLine) -> LogEvent | None:
        text = norm.text
        looks_bad = bool(_ERROR_TEXT.search(text)) or norm.level in ("ERROR", "CRITICAL")
        if not looks_bad or _HARMLESS.search(text) or text == self._last_error:
            return None
        self._last_error = text
        return ErrorLine(text=redact(text[:500]))
