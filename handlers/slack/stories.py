"""Where deployments' stories run and who hears them.

`StoryLoop` is the event loop of its own that runs the stories (probe, launch, follow, Slack updates) beside the
loop that acks Slack; `Told` is the thread the pipeline talks to (it tells the SlackThread and notes what the
surface needs afterwards); `LogThread` stands in for a thread when a deployment started from the terminal is
watched after a restart. `Surface` is what the handlers of `/deploy`, thread replies and approvals need of the
Slack surface (handlers.slack.app.SlackSurface).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Coroutine
from typing import Any, Protocol

from slack_sdk.web.async_client import AsyncWebClient

from bot.config import AppConfig
from bot.events import ApprovalDecided, Event, Launched, LogExcerpt
from bot.models import Deployment
from bot.pipeline import Outcome, Pipeline
from bot.store import Store
from handlers.slack.ackgate import AckGate
from handlers.slack.board import StatusBoard
from handlers.slack.refs import SlackRefs
from handlers.slack.thread import SlackThread

log = logging.getLogger(__name__)


class Surface(Protocol):
    """What the Slack handlers use of the surface: its parts, its background work, its threads."""

    pipeline: Pipeline
    store: Store
    config: AppConfig
    client: AsyncWebClient
    refs: SlackRefs
    acks: AckGate
    until_ready: bool

    def spawn(self, work: Coroutine[Any, Any, Any], name: str) -> asyncio.Future[Any]: ...

    def thread(self, channel: str, *, thread_ts: str | None = None, status_ts: str | None = None,
               board: StatusBoard | None = None, status_message: bool = True,
               max_lines: int | None = None, requested_at: float | None = None) -> SlackThread: ...

    async def run(self, thread: SlackThread, work: Coroutine[Any, Any, Outcome]) -> Outcome | None: ...


class Told:
    """The Thread the pipeline talks to: tells the SlackThread, and notes what the surface needs afterwards."""

    def __init__(self, slack: SlackThread, store: Store, acks: AckGate | None = None) -> None:
        self.slack = slack
        self.store = store
        self.acks = acks
        self.decisions: list[ApprovalDecided] = []

    async def emit(self, event: Event) -> None:
        if self.acks is not None:
            await self.acks.quiet()  # rendering and posting it is story work: the pending acks go first
        await self.slack.emit(event)
        if isinstance(event, Launched) and self.slack.status_ts is not None:
            # Kept with the deployment so that a restarted bot resumes updating the same status message.
            await self.store.update_deployment(event.deployment_id, status_ts=self.slack.status_ts)
        elif isinstance(event, ApprovalDecided):
            self.decisions.append(event)

    def decided_by(self, user: str) -> bool:
        return any(d.decided_by == user for d in self.decisions)


class LogThread:
    """For deployments started from the terminal that `serve` watches after a restart: no Slack thread to tell."""

    def __init__(self, dep: Deployment) -> None:
        self.dep = dep

    async def emit(self, event: Event) -> None:
        if not isinstance(event, LogExcerpt):
            log.info("%s (%s on %s): %s", self.dep.id, self.dep.model, self.dep.host, event.model_dump_json())



class StoryLoop:
    """An event loop of its own, in a thread, for the deployments' stories (probe, launch, follow, Slack updates).

    Slack's 3 s are for the ack alone: on the loop that serves Slack's requests an ack would wait behind the stories
    already running (measured: 64 ms p50 with 20 in flight against 12 ms for the ack path alone, bench_ack.py).
    Everything the pipeline owns that is bound to a loop (SSH connections, host locks) lives on this one.
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="deploybot-stories", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            # As asyncio.run ends: whatever is still pending (work that started while the others unwound) is
            # cancelled and awaited, so no coroutine is left to be torn down half-way.
            pending = asyncio.all_tasks(self.loop)
            for task in pending:
                task.cancel()
            if pending:
                self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()

    def submit(self, work: Coroutine[Any, Any, Any]) -> asyncio.Future[Any]:
        """Start `work` on the story loop; the result is a future of the CALLING loop (cancel it to cancel the work)."""
        return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, self.loop))

    async def run(self, work: Coroutine[Any, Any, Any]) -> Any:
        return await self.submit(work)

    async def cancel_all(self, timeout_s: float) -> list[str]:
        """(Runs ON the story loop.) Cancel every story and wait for them to unwind (close their streams, kill their
        agents); returns the names of those still running after `timeout_s`."""
        current = asyncio.current_task()
        deadline = self.loop.time() + timeout_s
        pending: set[asyncio.Task[Any]] = set()
        # Rounds: unwinding work may start more (a last Slack update, an excerpt flush); those are cancelled too.
        while (tasks := {t for t in asyncio.all_tasks() if t is not current}) and self.loop.time() < deadline:
            for task in tasks:
                task.cancel()
            _, pending = await asyncio.wait(tasks, timeout=max(0.0, deadline - self.loop.time()))
        return [t.get_name() for t in pending]

    def stop(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)

