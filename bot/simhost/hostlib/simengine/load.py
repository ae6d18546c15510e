"""Simulated traffic for the engines' `/metrics`: requests running and waiting, tokens generated, KV cache in use,
speculative drafts accepted. Values move as time passes (a steady background load, with some noise) and as real
requests reach the port (each completion runs while it is answered and adds its tokens).

The scenario's "traffic" sets the load: {"running": 1, "queued": 0, "tok_s": 40.0, "stall_after_s": null}.
`stall_after_s`: that many seconds after ready the engine stops generating and a request joins the queue every
second, as a wedged scheduler looks from outside.
"""

from __future__ import annotations

import random
import threading
import time
from contextlib import contextmanager
from collections.abc import Iterator
from dataclasses import dataclass

TOKENS_PER_RUNNING_REQUEST = 900  # KV tokens one running request holds (prompt + generated so far)


@dataclass
class Snapshot:
    running: int
    queued: int
    tok_s: float  # the engine's own recent generation throughput
    prompt_tokens: float
    generation_tokens: float
    kv_usage: float  # 0..1
    kv_used_tokens: int
    drafts: float
    draft_tokens: float
    accepted_tokens: float

    @property
    def accept_length(self) -> float:
        return 1.0 + self.accepted_tokens / self.drafts if self.drafts else 1.0

    @property
    def accept_rate(self) -> float:
        return self.accepted_tokens / self.draft_tokens if self.draft_tokens else 0.0


class SimLoad:
    def __init__(self, traffic: dict, *, kv_tokens: int, spec_tokens: int = 0, accept_length: float = 1.0) -> None:
        self.base_running = int(traffic.get("running", 1))
        self.base_queued = int(traffic.get("queued", 0))
        self.tok_s = float(traffic.get("tok_s", 40.0))
        self.stall_after_s = traffic.get("stall_after_s")
        self.kv_tokens = max(int(kv_tokens), 1)
        self.spec_tokens = spec_tokens
        self.accept_length = accept_length
        self.started = time.monotonic()
        self._last = self.started
        self._lock = threading.Lock()
        self._live = 0  # real requests being answered now
        self._rate = 0.0
        self.prompt_tokens = 0.0
        self.generation_tokens = 0.0
        self.drafts = self.draft_tokens = self.accepted_tokens = 0.0

    def _stalled_for(self, now: float) -> float | None:
        if self.stall_after_s is None:
            return None
        since = now - self.started - float(self.stall_after_s)
        return since if since >= 0 else None

    def _advance(self, now: float) -> None:
        dt, self._last = now - self._last, now
        running = self.base_running + self._live
        stalled = self._stalled_for(now) is not None
        self._rate = 0.0 if stalled or running == 0 else max(0.0, self.tok_s * random.uniform(0.9, 1.1))
        generated = self._rate * dt
        self.generation_tokens += generated
        if self.spec_tokens and generated:
            # Each draft step proposes spec_tokens and yields accept_length tokens (the bonus one included).
            steps = generated / self.accept_length
            self.drafts += steps
            self.draft_tokens += steps * self.spec_tokens
            self.accepted_tokens += steps * (self.accept_length - 1.0)

    @contextmanager
    def request(self, prompt_tokens: int, completion_tokens: int) -> Iterator[None]:
        """A real request reaching the port: running while it is answered, then its tokens counted."""
        with self._lock:
            self._advance(time.monotonic())
            self._live += 1
        try:
            yield
        finally:
            with self._lock:
                self._advance(time.monotonic())
                self._live -= 1
                self.prompt_tokens += prompt_tokens
                self.generation_tokens += completion_tokens

    def snapshot(self) -> Snapshot:
        with self._lock:
            now = time.monotonic()
            self._advance(now)
            running = self.base_running + self._live
            stalled = self._stalled_for(now)
            queued = self.base_queued + (int(stalled) + 1 if stalled is not None else 0)
            used = min(self.kv_tokens, running * TOKENS_PER_RUNNING_REQUEST + random.randint(0, 64) * running)
            return Snapshot(running=running, queued=queued, tok_s=self._rate, prompt_tokens=self.prompt_tokens,
                            generation_tokens=self.generation_tokens, kv_usage=used / self.kv_tokens,
                            kv_used_tokens=used, drafts=self.drafts, draft_tokens=self.draft_tokens,
                            accepted_tokens=self.accepted_tokens)
