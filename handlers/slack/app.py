"""The Slack app: a Bolt AsyncApp wired to the pipeline, and the background work it starts.

The listeners are thin: `/deploy` is handled by handlers.slack.deploy, replies in a deployment's thread by
handlers.slack.commands, Approve / Deny clicks and the expiry of unanswered approvals by handlers.slack.approvals,
App Home by handlers.slack.home. Every listener acks within Slack's 3 s; the work runs afterwards on the story loop
(handlers.slack.stories), never on the loop that acks.

Slack redelivers a request it thinks went unanswered (`X-Slack-Retry-Num`): every command and event is deduplicated
through `Store.first_delivery` (slash commands by trigger_id, events by event_id) before any work.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

from slack_bolt.app.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.config import Secrets
from bot.events import Failed, Stopped
from bot.metrics import BotMetrics, ObservedThread
from bot.pipeline import Outcome, Pipeline
from handlers.slack.ackgate import AckGate, Request, current_request
from handlers.slack.approvals import ApprovalClicks
from handlers.slack.blocks.approval import APPROVE_ACTION_ID, DENY_ACTION_ID
from handlers.slack.board import StatusBoard, StepState
from handlers.slack.client import SlackSetupError, make_web_client, pooled_copy
from handlers.slack.commands import ThreadCommands
from handlers.slack.deploy import DeployCommand
from handlers.slack.home import publish_home
from handlers.slack.metered import MeteredSlackThread
from handlers.slack.refs import SlackRefs
from handlers.slack.stories import LogThread, StoryLoop, Told
from handlers.slack.thread import SlackThread

log = logging.getLogger(__name__)

#: Bolt's default request path, for the command, events and interactivity alike (the manifest points all three here).
EVENTS_PATH = "/slack/events"


class SlackSurface:
    """deploybot's Slack side: the Bolt app (`.app`), its background work, and the Slack message refs.

    `until_ready=False` (serve mode) keeps following a server after it is ready, so a later crash is told in its
    thread too; those follow tasks run until the server ends or `close()` cancels them (the servers keep running,
    and `resume_active()` picks them up again).
    """

    def __init__(self, pipeline: Pipeline, secrets: Secrets, *, client: AsyncWebClient | None = None,
                 until_ready: bool = False) -> None:
        self.pipeline = pipeline
        # Read at scrape time from the story loop's objects (ints and a Counter: safe to read across threads).
        self.metrics = BotMetrics(followers=lambda: len(pipeline.following),
                                  ssh_failures=lambda: pipeline.remotes.connect_failures)
        self.store = pipeline.store
        self.config = pipeline.config
        self.client = client or make_web_client(secrets)
        self.refs = SlackRefs.beside(self.store)
        self.until_ready = until_ready
        self.stories = StoryLoop()
        # The stories' Web API calls keep their connections (on the story loop); Bolt's own calls use `client`.
        self.story_client = pooled_copy(self.client, self.stories.loop)
        #: Counts the requests whose ack has not gone back (serve's middleware); a story starts after them.
        self.acks = AckGate()
        self._closed = False
        self.tasks: set[asyncio.Future[Any]] = set()
        self._names: dict[asyncio.Future[Any], str] = {}
        self.deploy = DeployCommand(self)
        self.commands = ThreadCommands(self)
        self.approvals = ApprovalClicks(self)
        self.app = self._build_app(secrets)

    # ----------------------------------------------------------------------------------------- Bolt app

    def _build_app(self, secrets: Secrets) -> AsyncApp:
        socket_mode = bool(secrets.slack_app_token)
        if not secrets.slack_signing_secret and not socket_mode:
            raise SlackSetupError("SLACK_SIGNING_SECRET is not set: HTTP mode verifies every request with it "
                                  "(or set SLACK_APP_TOKEN for Socket Mode)")
        app = AsyncApp(
            client=self.client,
            # Given explicitly (never read from the environment by Bolt): Socket Mode needs none, HTTP always one.
            signing_secret=secrets.slack_signing_secret or "",
            request_verification_enabled=bool(secrets.slack_signing_secret),
            process_before_response=False,  # ack goes back first; the work continues after it
        )
        app.command("/deploy")(self.deploy.on_command)
        app.event("message")(self.commands.on_message)
        app.event("app_home_opened")(self._on_home_opened)
        app.action(APPROVE_ACTION_ID)(self.approvals.on_click)
        app.action(DENY_ACTION_ID)(self.approvals.on_click)
        return app

    # ----------------------------------------------------------------------------------------- background work

    def spawn(self, work: Coroutine[Any, Any, Any], name: str) -> asyncio.Future[Any]:
        """Run `work` on the story loop (never on the loop that acks), once the acks in flight went back (see
        handlers/slack/ackgate.py); returns a future of the calling loop."""
        future = self.stories.submit(self._after_acks(work, current_request()))
        self.tasks.add(future)
        self._names[future] = name
        future.add_done_callback(self._task_done)
        return future

    async def _after_acks(self, work: Coroutine[Any, Any, Any], own: Request | None) -> Any:
        try:
            await self.acks.quiet(own=own)
        except BaseException:
            work.close()  # cancelled before it began: never started, never awaited
            raise
        return await work

    def _task_done(self, task: asyncio.Future[Any]) -> None:
        self.tasks.discard(task)
        name = self._names.pop(task, "?")
        if not task.cancelled() and task.exception() is not None:
            log.error("background task %s failed", name, exc_info=task.exception())

    async def close(self, *, timeout_s: float = 10.0) -> None:
        """Cancel the background work (servers keep running on their hosts; `resume_active` picks them up again)
        and release the refs. A task that does not end within `timeout_s` is left behind and logged: a shutdown
        must not hang on one host's stream."""
        if self._closed:
            return
        self._closed = True
        # The stories are cancelled and awaited on their own loop (cancelling our futures alone would not wait for
        # them to unwind), then the SSH connections, which belong to that loop, are closed there; then it ends.
        for name in await self.stories.run(self.stories.cancel_all(timeout_s)):
            log.warning("background task %s did not end within %.0f s of its cancel", name, timeout_s)
        await self.stories.run(self.pipeline.close())
        await self.stories.run(self.story_client.close())
        self.stories.stop()
        self.refs.close()

    def thread(self, channel: str, *, thread_ts: str | None = None, status_ts: str | None = None,
                board: StatusBoard | None = None, status_message: bool = True,
                max_lines: int | None = None, requested_at: float | None = None) -> SlackThread:
        slack = self.config.slack
        if max_lines is not None:
            # `logs N` shows the N lines asked for, at once: its own limits, not the follower's.
            slack = slack.model_copy(update={"excerpt_max_lines": max_lines, "excerpt_interval_s": 0.0})
        return MeteredSlackThread(self.story_client, channel, thread_ts=thread_ts, status_ts=status_ts,
                                  config=slack, redact=self.pipeline.redact, board=board, refs=self.refs,
                                  status_message=status_message,
                                  story=self.metrics.story(requested_at=requested_at))

    async def _finish(self, outcome: Outcome, thread: SlackThread) -> None:
        """After the pipeline returned: a server that a stop ended shows it on its own status message."""
        await thread.flush()
        # (A stop's own thread has its stop row done already, with the details.)
        if outcome.state == "stopped" and outcome.deployment is not None and thread.status_ts is not None \
                and thread.board.steps["stop"].status != "done":
            await thread.show_on_board(Stopped(deployment_id=outcome.deployment.id, message="stopped on request"))

    async def run(self, thread: SlackThread, work: Coroutine[Any, Any, Outcome]) -> Outcome | None:
        """Run pipeline work told in `thread`; a bug is told there too (and logged), never swallowed silently."""
        try:
            outcome = await work
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug: the person who asked must not wait forever for an answer
            log.exception("pipeline work failed")
            await thread.emit(Failed(message=f"deploybot hit an internal error ({type(exc).__name__}); "
                                             f"the operator's log has the details"))
            await thread.flush()
            return None
        await self._finish(outcome, thread)
        return outcome

    # ----------------------------------------------------------------------------------------- approvals

    async def expire_due(self) -> int:
        """Expire the pending approvals past their expiry now (handlers.slack.approvals); how many expired."""
        return await self.approvals.expire_due()

    async def expire_forever(self, interval_s: float = 30.0) -> None:
        await self.approvals.expire_forever(interval_s)

    # ----------------------------------------------------------------------------------------- App Home

    async def _on_home_opened(self, event: dict[str, Any], body: dict[str, Any]) -> None:
        if event.get("tab", "home") != "home":
            return
        event_id = body.get("event_id")
        if event_id and not await self.store.first_delivery(f"event:{event_id}"):
            return
        self.spawn(publish_home(self.pipeline, self.story_client, event["user"]), name=f"home:{event['user']}")

    # ----------------------------------------------------------------------------------------- after a restart

    async def resume_active(self) -> list[asyncio.Future[Any]]:
        """Follow again every deployment the store says is active, and take up each restart the policy planned
        and had not launched (Pipeline.resumable_deployments), each told in its own thread (same status message);
        deployments started from the terminal are watched and logged."""
        tasks = []
        for dep in await self.pipeline.resumable_deployments():
            if dep.channel and dep.thread_ts:
                board = await self.refs.board(dep.channel, dep.status_ts) if dep.status_ts else None
                if board is None and dep.state == "ready":
                    # Its board was lost: say at least that it was ready (which also keeps routine lines quiet).
                    board = StatusBoard(title=f"start {dep.model} on {dep.host}")
                    board.steps["ready"] = StepState(status="done", text="ready before deploybot restarted")
                thread = self.thread(dep.channel, thread_ts=dep.thread_ts, status_ts=dep.status_ts, board=board)
                told = Told(thread, self.store, self.acks)
                tasks.append(self.spawn(self.run(thread, self.pipeline.resume(dep, told, until_ready=self.until_ready)),
                                        name=f"resume:{dep.id}"))
            else:
                logged = ObservedThread(LogThread(dep), self.metrics.story())
                tasks.append(self.spawn(self.pipeline.resume(dep, logged, until_ready=self.until_ready),
                                        name=f"resume:{dep.id}"))
        return tasks


def build_app(pipeline: Pipeline, secrets: Secrets, *, client: AsyncWebClient | None = None) -> AsyncApp:
    """The Bolt app alone (serve mode: it keeps following servers after ready). `SlackSurface` gives the same app
    with a handle on its background work, for a clean shutdown."""
    return SlackSurface(pipeline, secrets, client=client).app
