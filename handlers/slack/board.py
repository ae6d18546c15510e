"""The living status message of a deployment: ONE message in its thread, a progress list with one row per step,
updated in place as the pipeline's events arrive.

`StatusBoard` is the state behind it (a plain model, so the store can keep it and a restarted bot can go on
updating the same message); `StatusMessage` posts it once, updates it with chat.update as the board moves, posts
it anew when Slack says it is gone, and saves the board on every change. The blocks come from
handlers.slack.blocks.status.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any, Awaitable, Callable, Literal, Protocol

from pydantic import BaseModel, Field
from slack_sdk.errors import SlackApiError
from slack_sdk.models.blocks import Block
from slack_sdk.web.async_client import AsyncWebClient

from bot.events import (
    ApprovalDecided,
    ApprovalRequested,
    Crashed,
    Diagnosed,
    EngineLoad,
    Event,
    Failed,
    Info,
    Launched,
    Parsed,
    ParseFailed,
    PlanRejected,
    Planned,
    Probed,
    Ready,
    Step,
    Stopped,
)
from bot.mentions import mention as bot_mention
from bot.models import Action
from handlers.slack.blocks.mrkdwn import utc_time
from handlers.slack.blocks.status import plan_summary, probe_summary, ready_text, status_blocks, status_text

log = logging.getLogger(__name__)

StepStatus = Literal["pending", "running", "done", "failed"]

#: Row order per action. Every step is listed so an unexpected event still has a row; a step outside the action's
#: REQUIRED_STEPS (approval, a stop during a start) is shown only once something happened in it.
STEP_ORDER: dict[Action, tuple[Step, ...]] = {
    "start": ("parse", "probe", "plan", "approve", "launch", "ready", "stop"),
    "restart": ("parse", "stop", "probe", "plan", "approve", "launch", "ready"),
    "stop": ("parse", "approve", "stop", "probe", "plan", "launch", "ready"),
    "status": ("parse", "probe", "plan", "approve", "launch", "ready", "stop"),
    "logs": ("parse", "probe", "plan", "approve", "launch", "ready", "stop"),
}
REQUIRED_STEPS: dict[Action, frozenset[Step]] = {
    "start": frozenset({"parse", "probe", "plan", "launch", "ready"}),
    "restart": frozenset({"parse", "stop", "probe", "plan", "launch", "ready"}),
    "stop": frozenset({"parse", "stop"}),
    "status": frozenset({"parse"}),
    "logs": frozenset({"parse"}),
}
#: What a step shows while it runs, before an event says more.
STEP_WAITING: dict[Step, str] = {
    "probe": "probing the host",
    "plan": "planning",
    "ready": "waiting for the server to answer",
    "stop": "stopping",
}


class StepState(BaseModel):
    status: StepStatus = "pending"
    text: str = ""  # raw text (escaped when rendered)


def _initial_steps() -> dict[Step, StepState]:
    return {step: StepState() for step in STEP_ORDER["start"]}


class StatusBoard(BaseModel):
    """The state behind the ONE status message of a deployment: a progress list, one row per step.

    `apply(event)` moves it forward; `status_blocks(board)` renders it. It is a plain model so the store can keep
    it (`model_dump_json`) and a restarted bot can go on updating the same message.
    """

    title: str = "deployment request"
    action: Action = "start"
    steps: dict[Step, StepState] = Field(default_factory=_initial_steps)
    diagnosis: str | None = None
    live: str | None = None  # a ready server's latest figures from its engine's /metrics

    def visible(self) -> list[tuple[Step, StepState]]:
        required = REQUIRED_STEPS[self.action]
        return [
            (name, self.steps[name])
            for name in STEP_ORDER[self.action]
            if name in required or self.steps[name].status != "pending"
        ]

    def current(self) -> Step | None:
        """The step in progress: the last running one, else the first pending one."""
        rows = self.visible()
        running = [name for name, state in rows if state.status == "running"]
        if running:
            return running[-1]
        return next((name for name, state in rows if state.status == "pending"), None)

    def _set(self, step: Step, status: StepStatus, text: str | None = None) -> None:
        # Steps only move forward: a step that starts or ends closes any earlier one still shown as running.
        order = STEP_ORDER[self.action]
        for name in order[: order.index(step)]:
            if self.steps[name].status == "running":
                self.steps[name].status = "done"
        self.steps[step].status = status
        if text is not None:
            self.steps[step].text = text
        if status == "done":
            self._start_next(step)

    def _start_next(self, step: Step) -> None:
        order = STEP_ORDER[self.action]
        required = REQUIRED_STEPS[self.action]
        following = next((name for name in order[order.index(step) + 1 :] if name in required), None)
        # "launch" waits for its own event: after planning the pipeline may first ask for an approval.
        if following and following != "launch" and self.steps[following].status == "pending":
            self.steps[following] = StepState(status="running", text=STEP_WAITING.get(following, ""))

    def apply(self, event: Event) -> None:
        if isinstance(event, Parsed):
            self.action = event.request.action
            request = event.request
            self.title = " ".join(filter(None, [request.action, request.model, request.host and f"on {request.host}"]))
            self._set("parse", "done", event.request.summary() + (f" · {event.note}" if event.note else ""))
        elif isinstance(event, ParseFailed):
            self._set("parse", "failed", event.error.message)
        elif isinstance(event, Probed):
            self._set("probe", "done", probe_summary(event))
        elif isinstance(event, Planned):
            self._set("plan", "done", plan_summary(event.plan))
        elif isinstance(event, PlanRejected):
            self._set("plan", "failed", event.failure.reason)
        elif isinstance(event, Launched):
            if event.already_running:
                text = f"already running as {event.handle.label} (nothing new started)"
            else:
                text = f"{event.handle.label} · log {event.handle.log_path}"
            self._set("launch", "done", text)
        elif isinstance(event, Ready):
            self._set("ready", "done", ready_text(event))
        elif isinstance(event, Crashed):
            step = self.current() or "ready"
            self._set(step, "failed", event.stopped_text())
        elif isinstance(event, Diagnosed):
            self.diagnosis = event.diagnosis.cause
            self.live = None
        elif isinstance(event, EngineLoad):
            self.live = event.summary + (f" · ⚠️ {event.trouble}" if event.trouble else "")
        elif isinstance(event, Stopped):
            self._set("stop", "done", event.message)
            self.live = None
        elif isinstance(event, Failed):
            self._set(event.step or self.current() or "launch", "failed", event.message)
        elif isinstance(event, Info) and event.step is not None:
            if self.steps[event.step].status in ("pending", "running"):
                self._set(event.step, "running", event.message)
        elif isinstance(event, ApprovalRequested):
            # A relaunch offered under a crash has its own message; that board keeps showing the crash.
            if not (event.action == "relaunch" and self.failed()):
                self._set("approve", "running", "waiting for an approver: " + "; ".join(event.reasons))
        elif isinstance(event, ApprovalDecided):
            if self.steps["approve"].status == "running":
                self._approval_decided(event)
        # LogExcerpt and step-less Info do not change the board.

    def _approval_decided(self, event: ApprovalDecided) -> None:
        who = event.decided_by
        by = f" by {bot_mention(who)}" if who else ""  # board text is escaped when shown: a mark, not <@...>
        at = f" at {utc_time(event.decided_at)}"
        if event.decision == "approved":
            self._set("approve", "done", f"approved{by}{at}")
        elif event.decision == "superseded":
            self._set("approve", "running", "the host changed since it was asked: approve the new plan")
        else:
            self._set("approve", "failed", f"{event.decision}{by}{at}: nothing was changed")

    def progress(self) -> tuple[int, int]:
        rows = self.visible()
        return sum(1 for _, state in rows if state.status == "done"), len(rows)

    def failed(self) -> bool:
        return any(state.status == "failed" for state in self.steps.values())



# --------------------------------------------------------------------------------------------- the message

#: The message body for a text and its blocks (the thread's, which redacts every string on its way out).
Payload = Callable[[str, list[Block] | None], dict[str, Any]]
#: Called with (thread_ts, status_ts) once they are known or change, so the store can keep them.
TsCallback = Callable[[str, str], Awaitable[None] | None]
#: chat.update errors after which the status message is posted anew instead (someone deleted it, or it is too old).
STATUS_GONE = {"message_not_found", "cant_update_message", "edit_window_closed"}


class BoardRefs(Protocol):
    """Where boards are kept (handlers.slack.refs.SlackRefs)."""

    async def save_board(self, channel: str, thread_ts: str | None, status_ts: str, board: StatusBoard) -> None: ...

    async def board(self, channel: str, status_ts: str) -> StatusBoard | None: ...


class StatusMessage:
    """The one status message of a deployment's thread (`ts` once posted) and the board it shows.

    The channel and thread are given on every call: the thread learns them when its parent message is posted.
    Slack's errors are raised; the thread decides what a failed delivery means.
    """

    def __init__(self, client: AsyncWebClient, payload: Payload, *, board: StatusBoard | None = None,
                 ts: str | None = None, refs: BoardRefs | None = None, on_ts: TsCallback | None = None) -> None:
        self.client = client
        self.board = board or StatusBoard()
        self.ts = ts
        self._payload = payload
        self._refs = refs
        self._on_ts = on_ts
        self._lock = asyncio.Lock()

    async def apply(self, event: Event, channel: str, thread_ts: str | None) -> bool:
        """Move the board by `event`; shows it when it changed (returns whether it did)."""
        before = self.board.model_dump()
        self.board.apply(event)
        if self.board.model_dump() == before:
            return False
        await self.show(channel, thread_ts)
        return True

    async def show(self, channel: str, thread_ts: str | None) -> None:
        """Post the message, or update it in place; a message Slack says is gone is posted anew."""
        # Rendered inside the lock, so whichever update goes last carries the newest board.
        async with self._lock:
            if self.ts is None:
                await self._post(channel, thread_ts)
                return
            try:
                await self.client.chat_update(channel=channel, ts=self.ts, **self._body())
            except SlackApiError as exc:
                if exc.response.get("error") not in STATUS_GONE:
                    raise
                log.warning("status message %s is gone (%s); posting a new one", self.ts, exc.response["error"])
                await self._post(channel, thread_ts)
                return
            await self._save(channel, thread_ts)

    def _body(self) -> dict[str, Any]:
        return self._payload(status_text(self.board), status_blocks(self.board))

    async def _post(self, channel: str, thread_ts: str | None) -> None:
        response = await self.client.chat_postMessage(channel=channel, thread_ts=thread_ts, **self._body())
        self.ts = response["ts"]
        await self._save(channel, thread_ts)
        if self._on_ts is not None and thread_ts is not None:
            result = self._on_ts(thread_ts, self.ts)
            if inspect.isawaitable(result):
                await result

    async def _save(self, channel: str, thread_ts: str | None) -> None:
        if self._refs is not None and self.ts is not None:
            await self._refs.save_board(channel, thread_ts, self.ts, self.board)


async def show_decision(client: AsyncWebClient, refs: BoardRefs, payload: Payload, event: ApprovalDecided, *,
                        channel: str, thread_ts: str | None, status_ts: str) -> None:
    """The status message of the thread that asked for an approval shows its decision too (its approve row),
    even when the decision is told from another thread object or after a restart."""
    board = await refs.board(channel, status_ts)
    if board is None:
        return
    board.apply(event)
    await client.chat_update(channel=channel, ts=status_ts, **payload(status_text(board), status_blocks(board)))
    await refs.save_board(channel, thread_ts, status_ts, board)
