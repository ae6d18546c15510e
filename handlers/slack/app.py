"""The Slack app: a Bolt AsyncApp wired to the pipeline.

- `/deploy TEXT` is acknowledged at once (within Slack's 3 s in every case): a redelivery, help, a parse error or a
  refusal is answered in the ack itself (ephemeral); a request is acked empty and runs afterwards in a background
  task, told in a channel thread (a parent message, one status message updated in place, replies).
- Replies in a deployment's thread (`status`, `logs [N]`, `stop`, `restart`, `diagnose`, `help`) act on that
  deployment; the bot ignores its own messages and other bots.
- Approve / Deny buttons call `Pipeline.decide`, which is one-shot and bound to the plan's hash; a click that is
  refused (not an approver, own request, expired, already decided) is answered to the clicker only.
- App Home shows the fleet.

Slack redelivers a request it thinks went unanswered (`X-Slack-Retry-Num`): every command and event is deduplicated
through `Store.first_delivery` (slash commands by trigger_id, events by event_id) before any work.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import time
from collections.abc import Coroutine
from datetime import datetime
from typing import Any, Literal

from pydantic import Field
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.config import AppConfig, Secrets
from bot.events import ApprovalDecided, Diagnosed, Event, Failed, Info, Launched, LogExcerpt, Stopped
from bot.follow import fetch_tail
from bot.metrics import BotMetrics, ObservedThread
from bot.models import DeployRequest, Deployment, Frozen, ParseError, utcnow
from bot.pipeline import Outcome, Pipeline, Requester
from bot.remote import RemoteError
from bot.discovery import RESOLVE_BY_PROBING
from bot.mentions import mention_channel
from bot.request import help_text, is_help_request, parse_request
from bot.store import Store
from handlers.slack.client import SlackSetupError, make_web_client
from handlers.slack.home import publish_home
from handlers.slack.metered import MeteredSlackThread
from handlers.slack.refs import ApprovalMessage, SlackRefs
from handlers.slack.blocks.approval import APPROVE_ACTION_ID, DENY_ACTION_ID
from handlers.slack.blocks.mrkdwn import escape_keeping_mentions
from handlers.slack.blocks.replies import help_blocks, parent_text, parse_error_text, thread_help_text
from handlers.slack.board import StatusBoard, StepState
from handlers.slack.thread import SlackThread

log = logging.getLogger(__name__)

#: Bolt's default request path, for the command, events and interactivity alike (the manifest points all three here).
EVENTS_PATH = "/slack/events"
LOGS_DEFAULT_LINES = 30
LOGS_MAX_LINES = 200
#: How much of the log `logs N` and `diagnose` read (the end only, never the whole file).
TAIL_BYTES = 64 * 1024
#: How long a click waits for its approval message's ref to be saved (see _clicked_approval_message).
APPROVAL_REF_WAIT_STEPS = 20
APPROVAL_REF_WAIT_STEP_S = 0.1


# --------------------------------------------------------------------------------------------- thread commands

ThreadCommandName = Literal["status", "logs", "stop", "restart", "diagnose", "help"]

_THREAD_COMMAND = re.compile(
    r"^\s*(?:<@[UW][A-Z0-9]+>[\s,:]*)?"  # "@deploybot logs 5" works as well as "logs 5"
    r"(?P<name>status|logs|stop|restart|diagnose|help)"
    r"(?:\s+(?P<lines>\d{1,6}))?\s*[.!?]*\s*$",
    re.IGNORECASE,
)


class ThreadCommand(Frozen):
    name: ThreadCommandName
    lines: int = Field(default=LOGS_DEFAULT_LINES, ge=1, le=LOGS_MAX_LINES)


def parse_thread_command(text: str) -> ThreadCommand | None:
    """A reply in a deployment thread that is one of the bot's words, else None (people talk in threads too)."""
    match = _THREAD_COMMAND.match(text or "")
    if match is None:
        return None
    name = match["name"].lower()
    if match["lines"] is not None:
        if name != "logs":
            return None  # "stop 3" is not something the bot says it understands
        return ThreadCommand(name="logs", lines=max(1, min(LOGS_MAX_LINES, int(match["lines"]))))
    return ThreadCommand(name=name)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------- authorization


def host_refusal(config: AppConfig, host: str, user: str, channel: str | None) -> str | None:
    """Why this user, in this channel, may not act on `host` (hosts.<name>.allowed_users / allowed_channels)."""
    cfg = config.hosts.get(host)
    if cfg is None:
        return None  # the parser only returns inventory hosts; an unknown one fails later with its own message
    if cfg.allowed_users and user not in cfg.allowed_users:
        return f"you are not allowed to use {host} (hosts.{host}.allowed_users in app.yaml)"
    if cfg.allowed_channels and channel not in cfg.allowed_channels:
        where = ", ".join(mention_channel(c) for c in cfg.allowed_channels)
        return f"{host} takes requests only in {where} (hosts.{host}.allowed_channels in app.yaml)"
    return None


def request_refusal(config: AppConfig, request: DeployRequest, user: str, channel: str | None,
                    hosts_with_model: list[str]) -> str | None:
    """Why this request may not run for this user here, or None. A request without a host may reach several hosts:
    it is refused when any of them refuses the user, saying which hosts the user may name instead."""
    if request.host is not None:
        return host_refusal(config, request.host, user, channel)
    if request.action == "status":
        return None  # the overview of all hosts changes nothing
    scope = hosts_with_model if request.action == "start" else list(config.hosts)
    refused = {h: why for h in scope if (why := host_refusal(config, h, user, channel)) is not None}
    if not refused:
        return None
    allowed = [h for h in scope if h not in refused]
    hint = f"; name a host you may use: {', '.join(allowed)}" if allowed else ""
    return next(iter(refused.values())) + hint


# --------------------------------------------------------------------------------------------- threads


class _Told:
    """The Thread the pipeline talks to: tells the SlackThread, and notes what the surface needs afterwards."""

    def __init__(self, slack: SlackThread, store: Store) -> None:
        self.slack = slack
        self.store = store
        self.decisions: list[ApprovalDecided] = []

    async def emit(self, event: Event) -> None:
        await self.slack.emit(event)
        if isinstance(event, Launched) and self.slack.status_ts is not None:
            # Kept with the deployment so that a restarted bot resumes updating the same status message.
            await self.store.update_deployment(event.deployment_id, status_ts=self.slack.status_ts)
        elif isinstance(event, ApprovalDecided):
            self.decisions.append(event)

    def decided_by(self, user: str) -> bool:
        return any(d.decided_by == user for d in self.decisions)


class _LogThread:
    """For deployments started from the terminal that `serve` watches after a restart: no Slack thread to tell."""

    def __init__(self, dep: Deployment) -> None:
        self.dep = dep

    async def emit(self, event: Event) -> None:
        if not isinstance(event, LogExcerpt):
            log.info("%s (%s on %s): %s", self.dep.id, self.dep.model, self.dep.host, event.model_dump_json())


# --------------------------------------------------------------------------------------------- the surface


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
        self._closed = False
        self.tasks: set[asyncio.Future[Any]] = set()
        self._names: dict[asyncio.Future[Any], str] = {}
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
        app.command("/deploy")(self._on_deploy)
        app.event("message")(self._on_message)
        app.event("app_home_opened")(self._on_home_opened)
        app.action(APPROVE_ACTION_ID)(self._on_approval_click)
        app.action(DENY_ACTION_ID)(self._on_approval_click)
        return app

    # ----------------------------------------------------------------------------------------- background work

    def spawn(self, work: Coroutine[Any, Any, Any], name: str) -> asyncio.Future[Any]:
        """Run `work` on the story loop (never on the loop that acks); returns a future of the calling loop."""
        future = self.stories.submit(work)
        self.tasks.add(future)
        self._names[future] = name
        future.add_done_callback(self._task_done)
        return future

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
        self.stories.stop()
        self.refs.close()

    def _thread(self, channel: str, *, thread_ts: str | None = None, status_ts: str | None = None,
                board: StatusBoard | None = None, status_message: bool = True,
                max_lines: int | None = None, requested_at: float | None = None) -> SlackThread:
        slack = self.config.slack
        if max_lines is not None:
            # `logs N` shows the N lines asked for, at once: its own limits, not the follower's.
            slack = slack.model_copy(update={"excerpt_max_lines": max_lines, "excerpt_interval_s": 0.0})
        return MeteredSlackThread(self.client, channel, thread_ts=thread_ts, status_ts=status_ts, config=slack,
                                  redact=self.pipeline.redact, board=board, refs=self.refs,
                                  status_message=status_message,
                                  story=self.metrics.story(requested_at=requested_at))

    async def _finish(self, outcome: Outcome, thread: SlackThread) -> None:
        """After the pipeline returned: a server that a stop ended shows it on its own status message."""
        await thread.flush()
        # (A stop's own thread has its stop row done already, with the details.)
        if outcome.state == "stopped" and outcome.deployment is not None and thread.status_ts is not None \
                and thread.board.steps["stop"].status != "done":
            await thread.show_on_board(Stopped(deployment_id=outcome.deployment.id, message="stopped on request"))

    async def _run(self, thread: SlackThread, work: Coroutine[Any, Any, Outcome]) -> Outcome | None:
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

    # ----------------------------------------------------------------------------------------- /deploy

    async def _on_deploy(self, ack: AsyncAck, command: dict[str, Any]) -> None:
        received = time.perf_counter()  # request-to-PID starts here
        user, channel = command.get("user_id", ""), command.get("channel_id", "")
        text = command.get("text") or ""
        trigger = command.get("trigger_id")
        try:
            if trigger and not await self.store.first_delivery(f"command:{trigger}"):
                await ack()  # Slack's redelivery of a command already taken: it runs once
                return
            if not text.strip() or is_help_request(text):
                help_ = help_text(self.pipeline.inventory())
                await ack(response_type="ephemeral", text=help_, blocks=help_blocks(help_))
                return
            inventory = self.pipeline.inventory()
            parsed = parse_request(text, inventory)
            if isinstance(parsed, ParseError) and parsed.kind in RESOLVE_BY_PROBING:
                # Maybe a folder copied since the last probe: the host is probed after the ack, never before it.
                await ack()
                self.spawn(self._deploy_after_probe(text, user, channel, command.get("response_url"), received),
                           name=f"deploy:{trigger}")
                return
            if isinstance(parsed, ParseError):
                await ack(response_type="ephemeral", text=parse_error_text(parsed))
                await self.store.audit("parse", actor=user, result="refused", detail=f"{parsed.kind}: {text[:200]}")
                return
            hosts_with_model = [name for name, h in inventory.hosts.items() if parsed.model in h.models]
            refusal = request_refusal(self.config, parsed, user, channel, hosts_with_model)
            if refusal is not None:
                await ack(response_type="ephemeral", text=f"🚫 {escape_keeping_mentions(refusal)}")
                await self.store.audit(parsed.action, actor=user, host=parsed.host, result="refused",
                                       detail=f"not authorized in {channel}: {refusal}")
                return
        except Exception:
            log.exception("/deploy failed before its ack")
            await ack(response_type="ephemeral", text="deploybot hit an internal error; the operator's log has it")
            return
        await ack()
        self.spawn(self._deploy(parsed, text, user, channel, command.get("response_url"), received),
                   name=f"deploy:{trigger}")

    async def _deploy_after_probe(self, text: str, user: str, channel: str, response_url: str | None,
                                  received: float | None = None) -> None:
        """A name the inventory did not have: one probe of the host named (all when none is), read again, then
        deploy, or answer the parse error as the ack would have (ephemeral, through the response URL)."""
        parsed = await self.pipeline.parse(text)
        refusal = None
        if isinstance(parsed, ParseError):
            refusal = parse_error_text(parsed)
            await self.store.audit("parse", actor=user, result="refused", detail=f"{parsed.kind}: {text[:200]}")
        else:
            hosts_with_model = [n for n, h in self.pipeline.inventory().hosts.items() if parsed.model in h.models]
            why = request_refusal(self.config, parsed, user, channel, hosts_with_model)
            if why is not None:
                refusal = f"🚫 {escape_keeping_mentions(why)}"
                await self.store.audit(parsed.action, actor=user, host=parsed.host, result="refused",
                                       detail=f"not authorized in {channel}: {why}")
        if refusal is None:
            assert isinstance(parsed, DeployRequest)
            await self._deploy(parsed, text, user, channel, response_url, received)
        elif response_url:
            await AsyncRespond(response_url=response_url)(text=refusal, response_type="ephemeral",
                                                          replace_original=False)

    async def _deploy(self, request: DeployRequest, text: str, user: str, channel: str,
                      response_url: str | None, received: float | None = None) -> None:
        thread = self._thread(channel, requested_at=received)
        try:
            await thread.start(parent_text(user, text))
        except SlackApiError as exc:
            error = exc.response.get("error")
            log.warning("cannot post in %s: %s", channel, error)
            if response_url:
                hint = " Invite me first: `/invite @deploybot`." if error in ("not_in_channel", "channel_not_found") else ""
                await AsyncRespond(response_url=response_url)(
                    text=f"I could not post in this channel ({error}), so nothing was started.{hint}",
                    response_type="ephemeral", replace_original=False)
            return
        who = Requester(user, thread.channel, thread.thread_ts)
        told = _Told(thread, self.store)
        await self._run(thread, self.pipeline.handle_request(request, told, who, until_ready=self.until_ready))

    # ----------------------------------------------------------------------------------------- thread replies

    def _from_a_person(self, event: dict[str, Any], context: AsyncBoltContext) -> bool:
        if event.get("bot_id") or (event.get("app_id") and not event.get("user")):
            return False  # any bot, this one included
        if event.get("subtype") not in (None, "thread_broadcast"):
            return False  # edits, deletions, joins, bot_message...
        user = event.get("user")
        return bool(user) and user != context.get("bot_user_id")

    async def _on_message(self, event: dict[str, Any], body: dict[str, Any], context: AsyncBoltContext) -> None:
        thread_ts, ts = event.get("thread_ts"), event.get("ts")
        if not thread_ts or thread_ts == ts or not self._from_a_person(event, context):
            return
        command = parse_thread_command(event.get("text", ""))
        if command is None:
            return
        event_id = body.get("event_id")
        if event_id and not await self.store.first_delivery(f"event:{event_id}"):
            return  # Slack's redelivery of an event already handled
        channel, user = event["channel"], event["user"]
        dep = await self.store.deployment_for_thread(channel, thread_ts)
        if dep is None:
            return  # not a deployment thread
        if command.name != "help":
            refusal = host_refusal(self.config, dep.host, user, channel)
            if refusal is not None:
                await self.store.audit(command.name, actor=user, host=dep.host, deployment_id=dep.id,
                                       result="refused", detail=refusal)
                await self.client.chat_postEphemeral(channel=channel, user=user, thread_ts=thread_ts,
                                                     text=f"🚫 {escape_keeping_mentions(refusal)}")
                return
        self.spawn(self._thread_command(command, dep, user, channel, thread_ts), name=f"{command.name}:{dep.id}")

    async def _thread_command(self, command: ThreadCommand, dep: Deployment, user: str, channel: str,
                              thread_ts: str) -> None:
        who = Requester(user, channel, thread_ts)
        target = DeployRequest(action="status", host=dep.host, model=dep.model, port=dep.port)
        if command.name == "restart":
            # A new deployment: its own status message in the same thread.
            thread = self._thread(channel, thread_ts=thread_ts, requested_at=time.perf_counter())
            request = target.model_copy(update={"action": "restart"})
            await self._run(thread, self.pipeline.handle_request(request, _Told(thread, self.store), who,
                                                                 until_ready=self.until_ready))
            return
        reply = self._thread(channel, thread_ts=thread_ts, status_message=False,
                             max_lines=command.lines if command.name == "logs" else None)
        if command.name == "help":
            await reply.post(thread_help_text())
        elif command.name == "status":
            await self._run(reply, self.pipeline.status(dep.host, reply))
        elif command.name == "stop":
            await self._run(reply, self.pipeline.stop_request(target.model_copy(update={"action": "stop"}), reply, who))
        elif command.name == "logs":
            await self._run(reply, self._logs(dep, reply, command.lines))
        else:
            await self._run(reply, self._diagnose(dep, reply))

    async def _log_tail(self, dep: Deployment) -> str | None:
        if not dep.log_path:
            return None
        return self.pipeline.redact(await fetch_tail(self.pipeline.remotes.get(dep.host), dep.log_path, TAIL_BYTES))

    async def _logs(self, dep: Deployment, thread: SlackThread, lines: int) -> Outcome:
        try:
            tail = await self._log_tail(dep)
        except RemoteError as exc:
            await thread.emit(Failed(message=f"could not read the log on {dep.host}: {exc}"))
            return Outcome("failed", dep, str(exc))
        if tail is None:
            await thread.emit(Info(message=f"{dep.model} has no log yet"))
            return Outcome("done", dep)
        kept = tail.splitlines()[-lines:]
        await thread.emit(LogExcerpt(lines=kept) if kept else Info(message=f"the log of {dep.model} is empty"))
        return Outcome("done", dep)

    async def _diagnose(self, dep: Deployment, thread: SlackThread) -> Outcome:
        """Read the end of the log again and diagnose it (after a crash, or for a server that misbehaves)."""
        try:
            tail = await self._log_tail(dep)
        except RemoteError as exc:
            await thread.emit(Failed(message=f"could not read the log on {dep.host}: {exc}"))
            return Outcome("failed", dep, str(exc))
        if tail is None:
            await thread.emit(Info(message=f"{dep.model} has no log yet"))
            return Outcome("done", dep)
        diagnosis = await self.pipeline.diagnoser.diagnose(tail, exit_code=dep.exit_code, engine=dep.engine,
                                                           plan=dep.plan, secrets=self.pipeline.secrets.values())
        await thread.emit(Diagnosed(diagnosis=diagnosis))
        await self.store.audit("diagnose", host=dep.host, deployment_id=dep.id, result=diagnosis.category,
                               detail=diagnosis.cause)
        return Outcome("done", dep, diagnosis.cause)

    # ----------------------------------------------------------------------------------------- approvals

    async def _on_approval_click(self, ack: AsyncAck, body: dict[str, Any], action: dict[str, Any],
                                 respond: AsyncRespond) -> None:
        await ack()
        approve = action.get("action_id") == APPROVE_ACTION_ID
        user = body.get("user", {}).get("id", "")
        self.spawn(self._decide(str(action.get("value", "")), user, approve, body, respond),
                   name=f"decide:{action.get('value')}")

    async def _decide(self, approval_id: str, user: str, approve: bool, body: dict[str, Any],
                      respond: AsyncRespond) -> None:
        row = await self.store.get_approval(approval_id)
        if row is None:
            await respond(text="This approval is unknown to deploybot (its database was reset?); nothing was done.",
                          response_type="ephemeral", replace_original=False)
            return
        message = await self._clicked_approval_message(approval_id)
        data = row["data"]
        channel = (message.channel if message else None) or data.get("channel") or body["channel"]["id"]
        thread_ts = ((message.thread_ts if message else None) or data.get("thread_ts")
                     or body.get("message", {}).get("thread_ts") or body.get("container", {}).get("message_ts"))
        thread = await self._decision_thread(row, message, channel, thread_ts)
        told = _Told(thread, self.store)
        outcome = await self._run(thread, self.pipeline.decide(approval_id, user, approve, told,
                                                               until_ready=self.until_ready))
        if outcome is None:
            return  # a bug, already told in the thread
        if outcome.state == "awaiting_approval":
            # The host changed since it was asked, so nothing ran and the pipeline asked again: this message no
            # longer counts (it may have said "Approved" a moment ago).
            await thread.emit(ApprovalDecided(approval_id=approval_id, decision="superseded", decided_by=user,
                                              decided_at=utcnow()))
            await respond(text="The host changed since this was asked: approve the new request in the thread.",
                          response_type="ephemeral", replace_original=False)
            return
        if told.decided_by(user):
            return  # decided by this click: the messages show it
        # Refused, expired or decided by someone else first: only the clicker hears it; nothing changed.
        await respond(text=escape_keeping_mentions(outcome.message or f"nothing was done ({outcome.state})"),
                      response_type="ephemeral", replace_original=False)

    async def _clicked_approval_message(self, approval_id: str) -> ApprovalMessage | None:
        """The clicked approval's message. Its ref is saved right after Slack accepts the post, so a click that
        comes at once (Slack shows the message before chat.postMessage returns to us) can find none yet: wait for
        it a bounded moment instead of telling the decision in a new status message."""
        for _ in range(APPROVAL_REF_WAIT_STEPS):
            message = await self.refs.approval(approval_id)
            if message is not None:
                return message
            await asyncio.sleep(APPROVAL_REF_WAIT_STEP_S)
        return await self.refs.approval(approval_id)

    async def _decision_thread(self, row: dict[str, Any], message: ApprovalMessage | None, channel: str,
                               thread_ts: str | None) -> SlackThread:
        """Where a decision is told. A launch or stop that waited for approval goes on in the status message that
        asked; a relaunch after a crash is a new deployment with its own status message in the same thread."""
        if row["action"] in ("launch", "stop") and message is not None and message.status_ts:
            board = await self.refs.board(channel, message.status_ts)
            if board is not None:
                return self._thread(channel, thread_ts=thread_ts, status_ts=message.status_ts, board=board)
        title = message.view.title if message is not None else row["action"]
        board = StatusBoard(title=title, action="stop" if row["action"] == "stop" else "start")
        board.steps["parse"] = StepState(status="done", text="; ".join(row["data"].get("reasons") or []) or title)
        board.steps["approve"] = StepState(status="running", text="waiting for an approver")
        # Posted on its first change: a refused click leaves no trace in the channel.
        return self._thread(channel, thread_ts=thread_ts, board=board)

    async def expire_due(self) -> int:
        """Mark pending approvals past their expiry as expired and show it on their messages (no buttons left to
        click on a request nobody answered). Returns how many expired now."""
        expired = 0
        now = utcnow()
        for row in await self.store.pending_approvals():
            if datetime.fromisoformat(row["expires_at"]) >= now:
                continue
            if not await self.store.decide_approval(row["id"], "expired", None):
                continue  # someone clicked meanwhile
            expired += 1
            await self.store.audit(f"expired_{row['action']}", deployment_id=row["deployment_id"], result="expired",
                                   detail=row["id"])
            message = await self.refs.approval(row["id"])
            channel = (message.channel if message else None) or row["data"].get("channel")
            if channel:
                thread_ts = (message.thread_ts if message else None) or row["data"].get("thread_ts")
                thread = await self._decision_thread(row, message, channel, thread_ts)
                await thread.emit(ApprovalDecided(approval_id=row["id"], decision="expired", decided_at=now))
                await thread.flush()
        return expired

    async def expire_forever(self, interval_s: float = 30.0) -> None:
        while True:
            try:
                await self.expire_due()
            except Exception:  # noqa: BLE001 - one bad row must not stop the sweep; the log has it
                log.exception("approval expiry sweep failed")
            await asyncio.sleep(interval_s)

    # ----------------------------------------------------------------------------------------- App Home

    async def _on_home_opened(self, event: dict[str, Any], body: dict[str, Any]) -> None:
        if event.get("tab", "home") != "home":
            return
        event_id = body.get("event_id")
        if event_id and not await self.store.first_delivery(f"event:{event_id}"):
            return
        self.spawn(publish_home(self.pipeline, self.client, event["user"]), name=f"home:{event['user']}")

    # ----------------------------------------------------------------------------------------- after a restart

    async def resume_active(self) -> list[asyncio.Future[Any]]:
        """Follow again every deployment the store says is active, each told in its own thread (same status
        message); deployments started from the terminal are watched and logged."""
        tasks = []
        for dep in await self.store.active_deployments():
            if dep.channel and dep.thread_ts:
                board = await self.refs.board(dep.channel, dep.status_ts) if dep.status_ts else None
                if board is None and dep.state == "ready":
                    # Its board was lost: say at least that it was ready (which also keeps routine lines quiet).
                    board = StatusBoard(title=f"start {dep.model} on {dep.host}")
                    board.steps["ready"] = StepState(status="done", text="ready before deploybot restarted")
                thread = self._thread(dep.channel, thread_ts=dep.thread_ts, status_ts=dep.status_ts, board=board)
                tasks.append(self.spawn(self._run(thread, self.pipeline.resume(dep, _Told(thread, self.store),
                                                                               until_ready=self.until_ready)),
                                        name=f"resume:{dep.id}"))
            else:
                logged = ObservedThread(_LogThread(dep), self.metrics.story())
                tasks.append(self.spawn(self.pipeline.resume(dep, logged, until_ready=self.until_ready),
                                        name=f"resume:{dep.id}"))
        return tasks


def build_app(pipeline: Pipeline, secrets: Secrets, *, client: AsyncWebClient | None = None) -> AsyncApp:
    """The Bolt app alone (serve mode: it keeps following servers after ready). `SlackSurface` gives the same app
    with a handle on its background work, for a clean shutdown."""
    return SlackSurface(pipeline, secrets, client=client).app
