"""Acks first: the stories start once the Slack requests in flight have been answered.

Slack gives an ack 3 s; a deployment's story (thread, status message, probe, launch, follow) takes seconds and is
told in the thread whenever it is ready. Both share one process, so one GIL: measured under a burst of 200
`/deploy`, 20 at a time (bench/bench_ack.py), each story's Python work (about 5 ms of CPU) ran on the story loop's
thread while acks waited for the GIL, and ack p99 came to 2-3x a bare Bolt app's although the ack path alone is at
1.0x. So a story, once spawned, first waits until no ack is pending (bounded: a steady stream of requests never
starves the stories for long), then runs. The request that spawned a story is not waited for (its listener has
acked already; aiohttp is writing the response): a single request's story starts at once.

`enter()` / `leave()` run on the loop that serves Slack's requests; `quiet()` on the story loop reads the count
(an int read and written under the GIL: no lock needed).
"""

from __future__ import annotations

import asyncio
import contextvars

#: The longest a story waits for acks to go back; under a constant stream it then runs anyway.
MAX_WAIT_S = 1.0
#: How often a waiting story looks again (the acks it waits for take about 10-50 ms).
POLL_S = 0.002


class Request:
    """One Slack request being handled; `done` once its response (the ack) went back."""

    __slots__ = ("done",)

    def __init__(self) -> None:
        self.done = False


#: The request being handled (set by `AckGate.enter`): work spawned from inside it knows which one it is.
_CURRENT: contextvars.ContextVar[Request | None] = contextvars.ContextVar("deploybot_request", default=None)


def current_request() -> Request | None:
    """The Slack request the caller runs inside of (its listener, or what that started), if any."""
    return _CURRENT.get()


class AckGate:
    def __init__(self, *, max_wait_s: float = MAX_WAIT_S, poll_s: float = POLL_S) -> None:
        self.max_wait_s = max_wait_s
        self.poll_s = poll_s
        self._pending = 0

    @property
    def pending(self) -> int:
        """Slack requests received whose response (the ack) has not gone back yet."""
        return self._pending

    def enter(self) -> contextvars.Token[Request | None]:
        """A request arrived (on the loop that serves them); returns what `leave` takes."""
        self._pending += 1
        return _CURRENT.set(Request())

    def leave(self, token: contextvars.Token[Request | None]) -> None:
        request = _CURRENT.get()
        if request is not None:
            request.done = True
        self._pending -= 1
        _CURRENT.reset(token)

    def _others(self, own: Request | None) -> int:
        return self._pending - (1 if own is not None and not own.done else 0)

    async def quiet(self, *, own: Request | None = None) -> float:
        """Wait until no ack is pending but `own`'s (the request that spawned the waiter), at most max_wait_s;
        returns the seconds waited."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        while self._others(own) > 0 and loop.time() - started < self.max_wait_s:
            await asyncio.sleep(self.poll_s)
        return loop.time() - started
