"""Probes started before they are asked for: a surface that must first post messages (Slack: the parent message,
the status message and its first update, three Web API calls of 100-300 ms each against real Slack) starts the probe
its request will need, and the pipeline's probe step takes that one instead of probing again.

At most one per host; taken once; one older than MAX_AGE_S is not taken (the host may have changed) and is
cancelled. A probe that fails is taken like any other and raises where the pipeline's own would have.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Hashable

from bot.models import HostFacts

#: An early probe older than this is not used (seconds from its start).
MAX_AGE_S = 10.0


@dataclass
class _Early:
    what: Hashable  # the probe's arguments (model, drafters): taken only for the same
    started: float  # time.perf_counter() at its start
    future: asyncio.Future[HostFacts]


def _retrieve(future: asyncio.Future[HostFacts]) -> None:
    """A probe nobody took must not log 'exception was never retrieved'."""
    if not future.cancelled():
        future.exception()


class EarlyProbes:
    def __init__(self) -> None:
        self._by_host: dict[str, _Early] = {}

    def begin(self, host: str, what: Hashable, probe: Callable[[], Awaitable[HostFacts]]) -> None:
        """Start `probe()` now (on the running loop), unless one for this host is already waiting to be taken."""
        current = self._by_host.get(host)
        if current is not None and time.perf_counter() - current.started < MAX_AGE_S:
            return
        if current is not None:
            current.future.cancel()
        future = asyncio.ensure_future(probe())
        future.add_done_callback(_retrieve)
        self._by_host[host] = _Early(what, time.perf_counter(), future)

    def take(self, host: str, what: Hashable) -> tuple[float, asyncio.Future[HostFacts]] | None:
        """The early probe of this host with these arguments, fresh enough: (its start, its future); else None."""
        early = self._by_host.pop(host, None)
        if early is None:
            return None
        if early.what != what or time.perf_counter() - early.started >= MAX_AGE_S:
            early.future.cancel()
            return None
        return early.started, early.future
