"""Diagnosis off the event loop, under a deadline.

``bot.diagnose.diagnose`` is pure CPU work on text a host wrote. Run on the event loop it would hold the loop (and,
inside one ``re`` call, the GIL) for as long as it takes: Slack acks time out, ``status`` goes unanswered, SIGTERM
waits. So the pipeline hands it to a ``DiagnosisRunner``:

- ``isolate=True`` (``deploybot serve``): one worker process (spawned, so nothing of the bot's loop or sockets is
  inherited). The bot's own process keeps the GIL to itself; past the deadline the worker is killed and a new one
  is started for the next diagnosis.
- ``isolate=False`` (the default: tests, the console): a daemon thread. The input is bounded (``bot.tail.bound_text``)
  and no pattern backtracks, so each ``re`` call is short and the loop gets the GIL back between them; a daemon
  thread never holds up the interpreter's exit.

Either way, past ``deadline_s`` the answer is what is known without the rules: the last error-looking lines of the
tail, quoted and redacted, as an ``other`` diagnosis that says it was cut short.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import threading
from collections.abc import Callable, Iterable
from multiprocessing.pool import Pool
from typing import Any

from bot.diagnose.rules import GENERIC_ERROR
from bot.lognorm import normalize_line
from bot.models import Diagnosis, EvidenceLine, HostFacts, LaunchPlan
from bot.redact import redact
from bot.tail import bound_text

log = logging.getLogger(__name__)

#: Longer than any diagnosis of a bounded tail takes (well under a second); short enough that a thread waits for
#: its answer rather than for a timeout.
DEADLINE_S: float = 20.0
#: How many lines the cut-short answer quotes.
FALLBACK_LINES = 5
MAX_QUOTE_CHARS = 400

DiagnoseFn = Callable[..., Diagnosis]


def _default_target() -> DiagnoseFn:
    from bot.diagnose import diagnose  # imported lazily: the worker process imports it once, on its first task

    return diagnose


def _run_default(log_tail: str, kwargs: dict[str, Any]) -> Diagnosis:
    """What the worker process runs (module-level so that it pickles)."""
    return _default_target()(log_tail, **kwargs)


def cut_short(log_tail: str, deadline_s: float, secrets: Iterable[str] = ()) -> Diagnosis:
    """The answer when the rules did not finish: the last error lines of the tail (else its last lines), quoted."""
    lines = [(number, raw) for number, raw in enumerate(bound_text(log_tail).splitlines(), start=1) if raw.strip()]
    errors = [(number, raw) for number, raw in lines if GENERIC_ERROR.search(normalize_line(raw).text)]
    quoted = (errors or lines)[-FALLBACK_LINES:]
    secrets = list(secrets)
    return Diagnosis(
        category="other",
        cause=f"the diagnosis did not finish within {deadline_s:g} s; the last error lines of the log are quoted",
        evidence=[EvidenceLine(line=number, text=redact(raw[:MAX_QUOTE_CHARS], secrets)) for number, raw in quoted],
        next_steps=["read the end of the log (`logs 200` in this thread) for the cause",
                    "ask for `diagnose` again once the log is shorter or the host is less loaded"],
        confidence=0.1,
    )


class DiagnosisRunner:
    """Runs ``diagnose`` (or ``target``) off the event loop with a deadline; ``close()`` when done."""

    def __init__(self, *, deadline_s: float = DEADLINE_S, isolate: bool = False,
                 target: DiagnoseFn | None = None) -> None:
        self.deadline_s = deadline_s
        self.isolate = isolate
        self._target = target
        self._pool: Pool | None = None
        self._pool_lock = threading.Lock()
        self.cut_short_count = 0  # how many diagnoses hit the deadline (for the audit and the tests)

    async def diagnose(self, log_tail: str, *, exit_code: int | None = None, engine: str | None = None,
                       plan: LaunchPlan | None = None, facts: HostFacts | None = None,
                       secrets: Iterable[str] = (), ended: bool = False) -> Diagnosis:
        # Cut here, before it is copied to the worker: a 10 MB line costs the loop a 4 KB copy, not a 10 MB pickle.
        log_tail = bound_text(log_tail)
        kwargs: dict[str, Any] = {"exit_code": exit_code, "engine": engine, "plan": plan, "facts": facts,
                                  "ended": ended}
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Diagnosis] = loop.create_future()
        if self.isolate:
            self._submit_to_process(log_tail, kwargs, loop, future)
        else:
            self._submit_to_thread(log_tail, kwargs, loop, future)
        try:
            return await asyncio.wait_for(future, self.deadline_s)
        except TimeoutError:
            self.cut_short_count += 1
            log.warning("diagnosis cut short after %.1f s", self.deadline_s)
            if self.isolate:
                await asyncio.to_thread(self._kill_pool)
            return cut_short(log_tail, self.deadline_s, secrets)

    def _submit_to_thread(self, log_tail: str, kwargs: dict[str, Any], loop: asyncio.AbstractEventLoop,
                          future: asyncio.Future[Diagnosis]) -> None:
        target = self._target or _default_target()

        def work() -> None:
            try:
                result = target(log_tail, **kwargs)
            except BaseException as exc:  # handed to the awaiting coroutine, which raises it
                _post(loop, future, None, exc)
            else:
                _post(loop, future, result, None)

        threading.Thread(target=work, name="deploybot-diagnose", daemon=True).start()

    def _submit_to_process(self, log_tail: str, kwargs: dict[str, Any], loop: asyncio.AbstractEventLoop,
                           future: asyncio.Future[Diagnosis]) -> None:
        pool = self._ensure_pool()
        function, args = (self._target, (log_tail,)) if self._target else (_run_default, (log_tail, kwargs))
        call_kwargs = kwargs if self._target else {}
        pool.apply_async(function, args, call_kwargs,
                         callback=lambda result: _post(loop, future, result, None),
                         error_callback=lambda exc: _post(loop, future, None, exc))

    def _ensure_pool(self) -> Pool:
        with self._pool_lock:
            if self._pool is None:
                self._pool = multiprocessing.get_context("spawn").Pool(processes=1, initializer=_default_target)
            return self._pool

    def warm_up(self) -> None:
        """Start the worker process now (``deploybot serve`` does, so the first crash does not pay for it)."""
        if self.isolate:
            self._ensure_pool()

    def _kill_pool(self) -> None:
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.terminate()
            pool.join()

    async def close(self) -> None:
        await asyncio.to_thread(self._kill_pool)


def _post(loop: asyncio.AbstractEventLoop, future: asyncio.Future[Diagnosis], result: Diagnosis | None,
          exc: BaseException | None) -> None:
    """Hand a finished diagnosis to the loop that asked for it, from the worker's thread; a loop already closed (the
    bot shut down, or the caller gave up and went) has nobody waiting, so the result is dropped, not raised in the
    thread."""
    try:
        loop.call_soon_threadsafe(_settle, future, result, exc)
    except RuntimeError:
        if not loop.is_closed():
            raise


def _settle(future: asyncio.Future[Diagnosis], result: Diagnosis | None, exc: BaseException | None) -> None:
    if future.done():  # the deadline passed first
        return
    if exc is not None:
        future.set_exception(exc)
    else:
        assert result is not None
        future.set_result(result)
