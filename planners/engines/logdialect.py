"""How an engine's log reads: the lines it prints at its milestones (weights loaded, KV cache allocated, ready,
decode statistics) and the figures they carry. Plain frozen data, one ``LogDialect`` per engine
(planners/engines/<name>/logs.py); bot/logevents.py reads a log through them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

UVICORN_RUNNING = re.compile(r"Uvicorn running on (https?://\S+)")

#: (normalised text, memo) -> figures; memo is the log reader's scratch for one launch (hints a later line completes)
Reader = Callable[[str, dict[str, Any]], Any]


def _figures(patterns: tuple[re.Pattern[str], ...], text: str) -> dict[str, str] | None:
    for pattern in patterns:
        match = pattern.search(text)
        if match:
            return {k: v for k, v in match.groupdict().items() if v is not None}
    return None


def _gib(found: dict[str, str]) -> float | None:
    if "gib" in found:
        return round(float(found["gib"]), 2)
    if "mib" in found:
        return round(float(found["mib"]) / 1024, 2)
    return None


@dataclass(frozen=True)
class LogDialect:
    """The lines an engine prints at its milestones. Each pattern is searched in a line without its prefixes
    (bot/logevents.py's normalize_line).

    The figures a line carries are read by the engine's reader when it has one (``read_*``: SGLang's K + V sizes,
    vLLM's hint lines completed by a later one), else from the matching pattern's named groups: ``seconds`` and
    ``gib`` / ``mib`` for weights; ``tokens`` and ``gib`` / ``mib`` for the KV cache; ``url`` for ready;
    ``running`` and ``throughput`` (optionally ``queued``) for decode statistics."""

    #: Lines only this engine prints: used to tell which engine wrote a log when nobody said.
    fingerprint: re.Pattern[str]
    #: The server answers requests from this line on.
    ready: tuple[re.Pattern[str], ...]
    weights_loaded: tuple[re.Pattern[str], ...]
    kv_allocated: tuple[re.Pattern[str], ...]
    decode_stats: tuple[re.Pattern[str], ...] = ()
    #: The first line of a launch (a log holding several launches is read from the last one).
    launch_start: re.Pattern[str] | None = None
    #: Whether the web server's own start line (Uvicorn) means ready; SGLang prints it before its warm-up request.
    uvicorn_means_ready: bool = False
    #: The fingerprint may also match the raw line (vLLM's process prefixes, "(APIServer pid=1)", are its own).
    fingerprint_raw: bool = False
    #: A line naming the server's URL (group 1), besides Uvicorn's.
    url: re.Pattern[str] | None = None
    read_weights: Reader | None = None  # -> (seconds, gib)
    read_kv: Reader | None = None  # -> (tokens, gib)
    read_graph: Reader | None = None  # -> (seconds, gib)
    read_ready: Reader | None = None  # -> bool
    read_decode: Reader | None = None  # -> dict of DecodeStats fields; "merge": True completes the last one

    def says(self, milestone: str, text: str) -> bool:
        """Whether ``text`` is one of this engine's ``milestone`` lines (ready / weights_loaded / kv_allocated /
        decode_stats)."""
        return any(p.search(text) for p in getattr(self, milestone))

    def wrote(self, text: str, raw: str) -> bool:
        """Whether a line (normalised ``text`` of ``raw``) is one only this engine prints."""
        return bool(self.fingerprint.search(text) or (self.fingerprint_raw and self.fingerprint.search(raw)))

    def weights(self, text: str, memo: dict[str, Any]) -> tuple[float | None, float | None] | None:
        if self.read_weights:
            return self.read_weights(text, memo)
        found = _figures(self.weights_loaded, text)
        if found is None:
            return None
        return (float(found["seconds"]) if "seconds" in found else None), _gib(found)

    def kv(self, text: str, memo: dict[str, Any]) -> tuple[int, float | None] | None:
        if self.read_kv:
            return self.read_kv(text, memo)
        found = _figures(self.kv_allocated, text)
        if found is None or "tokens" not in found:
            return None
        return int(found["tokens"].replace(",", "")), _gib(found)

    def graph(self, text: str, memo: dict[str, Any]) -> tuple[float, float] | None:
        return self.read_graph(text, memo) if self.read_graph else None

    def is_ready(self, text: str, memo: dict[str, Any]) -> bool:
        if self.read_ready:
            return bool(self.read_ready(text, memo))
        return self.says("ready", text) or bool(self.uvicorn_means_ready and UVICORN_RUNNING.search(text))

    def url_in(self, text: str) -> str | None:
        for pattern in (UVICORN_RUNNING, self.url, *self.ready):
            match = pattern.search(text) if pattern is not None else None
            if match and match.groups():
                found = match.groupdict().get("url") or match.group(1)
                if found:
                    return found.rstrip(".,)")
        return None

    def decode(self, text: str, memo: dict[str, Any]) -> dict[str, Any] | None:
        if self.read_decode:
            return self.read_decode(text, memo)
        found = _figures(self.decode_stats, text)
        if found is None or "running" not in found or "throughput" not in found:
            return None
        stats: dict[str, Any] = {"running": int(found["running"]), "throughput_tok_s": float(found["throughput"])}
        if "queued" in found:
            stats["queued"] = int(found["queued"])
        return stats
