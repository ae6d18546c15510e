"""Follow a deployment: one long-running stream (its backend's `watch`) -> excerpts, ready, crash.

The stream carries log lines with their byte offsets, health changes, queue states and the engine's exit
(bot/backends/base.py); the follower knows no PIDs and no paths, only the handle it gives back. It batches
lines into short excerpts, reads healthy-path events (weights loaded, KV cache, ready, decode stats), decides
ready (the health endpoint answers 200 and the engine said it is ready) or crashed (the process is gone), and keeps
the byte offset in the store so that a restarted bot resumes exactly where it stopped.
If the link to the host drops, it reconnects with backoff and resumes from the last offset.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Literal

from bot.backends.base import Backend, Exited, Health, LogLine, Queued, WatchEvent
from bot.events import LogExcerpt, Info, Thread
from bot.logevents import DecodeStats, KvCacheAllocated, LogReader, ServerReady
from bot.models import Deployment
from bot.remote import RemoteError
from bot.store import Store

log = logging.getLogger(__name__)

#: After /health answers 200, how long we wait for the engine's own ready line before believing /health alone
#: (a version may reword the line; /health 200 is the contract).
READY_LINE_GRACE_S = 10.0


@dataclass
class FollowOutcome:
    state: Literal["ready", "crashed", "lost"]
    exit_code: int | None = None
    seconds: float = 0.0
    kv_tokens: int | None = None
    last_decode: DecodeStats | None = None
    lines_seen: int = 0


@dataclass
class ExcerptBatcher:
    """Collects lines and releases them as short excerpts: at most one per interval, at most max_lines each."""

    interval_s: float
    max_lines: int
    lines: list[str] = field(default_factory=list)
    last_flush: float = 0.0

    def add(self, line: str) -> None:
        self.lines.append(line)

    def due(self, now: float) -> bool:
        return bool(self.lines) and now - self.last_flush >= self.interval_s

    def take(self, now: float, redact: Callable[[str], str]) -> LogExcerpt | None:
        """The excerpt to post; only the lines that leave the host are redacted (the cut ones never do)."""
        if not self.lines:
            return None
        kept = [redact(line) for line in self.lines[-self.max_lines:]]
        omitted = len(self.lines) - len(kept)
        self.lines = []
        self.last_flush = now
        return LogExcerpt(lines=kept, omitted=omitted)


class Follower:
    def __init__(
        self,
        backend: Backend,
        store: Store,
        thread: Thread,
        deployment: Deployment,
        *,
        redact: Callable[[str], str],
        excerpt_interval_s: float = 5.0,
        excerpt_max_lines: int = 12,
        ready_timeout_s: float = 1800.0,
        reconnect_attempts: int = 8,
        backoff_max_s: float = 15.0,
    ) -> None:
        self.backend = backend
        self.store = store
        self.thread = thread
        self.dep = deployment
        self.redact = redact
        self.batcher = ExcerptBatcher(excerpt_interval_s, excerpt_max_lines)
        self.reader = LogReader(engine=deployment.engine)
        self.ready_timeout_s = ready_timeout_s
        self.reconnect_attempts = reconnect_attempts
        self.backoff_max_s = backoff_max_s
        self.ready_line_seen = False
        self.ready_reached = False  # announced once; later messages only stream on
        self.health_ok_since: float | None = None
        self.kv_tokens: int | None = None
        self.last_decode: DecodeStats | None = None
        self.lines_seen = 0
        self.queued_reason: str | None = None

    async def _flush(self, now: float) -> None:
        excerpt = self.batcher.take(now, self.redact)
        if excerpt is not None:
            await self.thread.emit(excerpt)
        # The offset is saved after the excerpt is out: a restart resumes after what was posted.
        await self.store.update_deployment(self.dep.id, log_offset=self.dep.log_offset)

    async def run(self, *, until_ready: bool) -> FollowOutcome:
        """Follow until ready (when until_ready) or until the engine ends; reconnect when the link drops."""
        started = self.dep.created_at.timestamp()
        failures = 0
        while True:
            try:
                outcome = await self._stream_once(until_ready=until_ready, started=started)
            except RemoteError as exc:
                failures += 1
                if failures > self.reconnect_attempts:
                    await self._flush(time.time())
                    await self.thread.emit(Info(message=f"lost the link to {self.dep.host} and could not get it back: {exc}"))
                    return FollowOutcome(state="lost", lines_seen=self.lines_seen)
                delay = min(self.backoff_max_s, 0.5 * 2 ** (failures - 1))
                await self.thread.emit(Info(message=f"link to {self.dep.host} lost ({exc}); reconnecting in {delay:.1f} s, "
                                                    f"resuming the log at byte {self.dep.log_offset}"))
                await asyncio.sleep(delay)
                continue
            if outcome is not None:
                return outcome
            # The stream ended without an exit record (the agent was killed, sshd restarted): reconnect.
            failures += 1
            if failures > self.reconnect_attempts:
                return FollowOutcome(state="lost", lines_seen=self.lines_seen)
            await asyncio.sleep(min(self.backoff_max_s, 0.5 * 2 ** (failures - 1)))

    async def _stream_once(self, *, until_ready: bool, started: float) -> FollowOutcome | None:
        assert self.dep.handle is not None, "a deployment is followed once launched"
        # aclosing: returning at ready must end the backend's stream now, not whenever the generator is collected.
        async with aclosing(self.backend.watch(self.dep.handle, offset=self.dep.log_offset)) as stream:
            return await self._consume(stream, until_ready=until_ready, started=started)

    async def _consume(self, stream: AsyncIterator[WatchEvent], *, until_ready: bool,
                       started: float) -> FollowOutcome | None:
        async for event in stream:
            now = time.time()
            if isinstance(event, LogLine):
                self._on_line(event.text)
                self.dep.log_offset = event.offset
            elif isinstance(event, Health):
                if event.status == 200:
                    self.health_ok_since = self.health_ok_since or now
                else:
                    self.health_ok_since = None
            elif isinstance(event, Queued):
                if event.reason != self.queued_reason:
                    self.queued_reason = event.reason
                    await self.thread.emit(Info(message=f"queued: {event.reason}", step="launch"))
            elif isinstance(event, Exited):
                await self._flush(now)
                return FollowOutcome(state="crashed", exit_code=event.code, seconds=now - started,
                                     kv_tokens=self.kv_tokens, last_decode=self.last_decode,
                                     lines_seen=self.lines_seen)
            if self.batcher.due(now):
                await self._flush(now)
            if not self.ready_reached and self._is_ready(now):
                self.ready_reached = True
                await self._flush(now)
                if until_ready:
                    return FollowOutcome(state="ready", seconds=now - started, kv_tokens=self.kv_tokens,
                                         last_decode=self.last_decode, lines_seen=self.lines_seen)
            elif not self.ready_reached and now - started > self.ready_timeout_s:
                await self._flush(now)
                await self.thread.emit(Info(message=f"not ready after {self.ready_timeout_s:.0f} s; still following"))
                self.ready_timeout_s = float("inf")
        return None

    def _on_line(self, line: str) -> None:
        self.lines_seen += 1
        self.batcher.add(line)
        for event in self.reader.feed(line):
            if isinstance(event, ServerReady):
                self.ready_line_seen = True
            elif isinstance(event, KvCacheAllocated) and event.tokens:
                self.kv_tokens = event.tokens
            elif isinstance(event, DecodeStats):
                self.last_decode = event

    def _is_ready(self, now: float) -> bool:
        if self.health_ok_since is None:
            return False
        return self.ready_line_seen or now - self.health_ok_since >= READY_LINE_GRACE_S
