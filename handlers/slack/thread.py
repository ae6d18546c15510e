"""A deployment's Slack thread: the `bot.events.Thread` that tells the story in Slack.

Layout: a parent message in the channel (who asked, what), and in its thread ONE status message, updated in place
as steps complete (chat.update), followed by replies: batched log excerpts, the ready line, a diagnosis with its
approval buttons, errors.

Log excerpts are rate-limited: at most one excerpt message per `SlackConfig.excerpt_interval_s`, each with at most
`excerpt_max_lines` lines (the newest); what is left out is counted in the message ("… 13 lines cut"). A background
"pump" task sends them, so `emit` never waits on the interval.

Every event is redacted before it is rendered (so a cut can never leave half a secret), and every string of every
outgoing payload is redacted once more at the door.

Approvals: ApprovalRequested posts an approval message (Approve / Deny buttons, the argv diff) and remembers it in
`refs`; ApprovalDecided, which may arrive in another SlackThread object or after a restart, finds it there and
turns it into "Approved by ... at ..." without buttons, and moves the asking status message's approve row too.
With `refs`, every status update also saves the board, so a restarted bot updates the same status message.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable, Protocol

import aiohttp
from pydantic import TypeAdapter, ValidationError
from slack_sdk.errors import SlackApiError
from slack_sdk.models.blocks import Block
from slack_sdk.web.async_client import AsyncWebClient

from bot.config import SlackConfig
from bot.events import (
    ApprovalDecided,
    ApprovalRequested,
    Crashed,
    Diagnosed,
    Event,
    Failed,
    Info,
    LogExcerpt,
    ParseFailed,
    PlanRejected,
    Ready,
    Stopped,
)
from bot.models import Diagnosis
from handlers.slack.blocks.approval import (
    ApprovalView,
    approval_blocks,
    approval_text,
    approval_view,
    decided_view,
)
from handlers.slack.blocks.diagnosis import diagnosis_blocks, diagnosis_text
from handlers.slack.blocks.excerpts import excerpt_blocks
from handlers.slack.blocks.mrkdwn import escape, escape_keeping_mentions
from handlers.slack.blocks.replies import parse_error_text, plan_failure_blocks
from handlers.slack.blocks.status import ready_text
from handlers.slack.board import BoardRefs, StatusBoard, StatusMessage, TsCallback, show_decision
from handlers.slack.refs import ApprovalMessage

log = logging.getLogger(__name__)

Redactor = Callable[[str], str]
#: Asked when a diagnosis arrives: the approval to show under it (the pipeline creates it), or None.
ApprovalLookup = Callable[[Diagnosis], Awaitable[ApprovalView | None]]



class MessageRefs(BoardRefs, Protocol):
    """Where status boards and approval messages are kept (handlers.slack.refs.SlackRefs)."""

    async def save_approval(self, message: ApprovalMessage) -> None: ...

    async def approval(self, approval_id: str) -> ApprovalMessage | None: ...


_EVENT = TypeAdapter(Event)
#: Failures of delivery that must not stop a deployment: they are logged and kept in `delivery_errors`.
_DELIVERY_ERRORS = (SlackApiError, aiohttp.ClientError, asyncio.TimeoutError)


def _redact_tree(value: Any, redact: Redactor) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_redact_tree(item, redact) for item in value]
    if isinstance(value, dict):
        return {key: _redact_tree(item, redact) for key, item in value.items()}
    return value


def redact_event(event: Event, redact: Redactor) -> Event:
    """The event with every string redacted (log lines, messages, evidence, paths...)."""
    data = event.model_dump(mode="json")
    clean = _redact_tree(data, redact)
    if clean == data:
        return event
    try:
        return _EVENT.validate_python(clean)
    except ValidationError:
        # Redaction broke a field's own rule (a pattern): keep the event; the payload is still redacted at the door.
        log.warning("redacted %s event no longer validates; relying on payload redaction", event.kind)
        return event


class SlackThread:
    """Implements bot.events.Thread for one deployment in one Slack channel."""

    def __init__(
        self,
        client: AsyncWebClient,
        channel: str,
        *,
        thread_ts: str | None = None,
        status_ts: str | None = None,
        config: SlackConfig,
        redact: Redactor = lambda s: s,
        on_ts: TsCallback | None = None,
        board: StatusBoard | None = None,
        approval_for: ApprovalLookup | None = None,
        refs: MessageRefs | None = None,
        status_message: bool = True,
        quiet_after_ready: bool = True,
    ) -> None:
        """`status_message=False`: a thread for a command in an existing thread (`logs`, `stop`, ...) whose events
        are answered as replies only, leaving the deployment's status message alone.

        `quiet_after_ready`: once the server is ready its routine log lines (decode stats every few seconds, for
        days) are not posted; a crash still brings its last lines and diagnosis, and `logs N` shows the log."""
        self.client = client
        self.channel = channel
        self.thread_ts = thread_ts
        self.status = StatusMessage(client, self._payload, board=board, ts=status_ts, refs=refs, on_ts=on_ts)
        self.delivery_errors: list[str] = []
        self._config = config
        self._redact = redact
        self._approval_for = approval_for
        self._refs = refs
        self._status_message = status_message
        self._quiet_after_ready = quiet_after_ready
        # Excerpt batching: lines waiting, lines already cut upstream, when the last excerpt went out.
        self._pending_lines: list[str] = []
        self._pending_cut = 0
        self._last_excerpt_at: float | None = None
        self._pump: asyncio.Task[None] | None = None
        self._send_now = asyncio.Event()
        self._crash_tail: list[str] | None = None

    @property
    def status_ts(self) -> str | None:
        """The ts of the deployment's status message, once posted."""
        return self.status.ts

    @property
    def board(self) -> StatusBoard:
        return self.status.board

    # ----------------------------------------------------------------------------------------- public API

    async def start(self, parent_text: str) -> None:
        """Post the parent message (unless the thread exists already) and the status message in its thread."""
        if self.thread_ts is None:
            response = await self.client.chat_postMessage(channel=self.channel, text=self._redact(parent_text))
            self.channel = response["channel"]  # a channel name given in becomes its ID
            self.thread_ts = response["ts"]
        if not self._status_message:
            return
        await self.status.show(self.channel, self.thread_ts)

    async def emit(self, event: Event) -> None:
        """Render one pipeline event. Slack failures are logged and kept in `delivery_errors`, never raised:
        a deployment must not stop because a message could not be delivered."""
        self._require_thread()
        event = redact_event(event, self._redact)
        if self._status_message:
            await self._apply_to_board(event)
        try:
            await self._reply_for(event)
        except _DELIVERY_ERRORS as exc:
            self._delivery_failed(f"{event.kind}: {exc}")

    async def show_on_board(self, event: Event) -> None:
        """Move the status message only, without a reply (e.g. "stopped" on the board of a server that a `stop`
        in its thread ended, whose own reply went out already)."""
        self._require_thread()
        await self._apply_to_board(redact_event(event, self._redact))

    async def _apply_to_board(self, event: Event) -> None:
        try:
            await self.status.apply(event, self.channel, self.thread_ts)
        except _DELIVERY_ERRORS as exc:
            self._delivery_failed(f"status after {event.kind}: {exc}")

    async def flush(self) -> None:
        """Send the excerpts still waiting (end of a deployment), and a crash's last lines if no diagnosis came."""
        await self._drain_excerpts()
        if self._crash_tail:
            tail, self._crash_tail = self._crash_tail, None
            lines = tail[-self._config.excerpt_max_lines :]
            try:
                await self.post("last lines before the crash", excerpt_blocks(lines, len(tail) - len(lines)))
            except _DELIVERY_ERRORS as exc:
                self._delivery_failed(f"crash tail: {exc}")

    async def post(self, text: str, blocks: list[Block] | None = None) -> str:
        """A reply in the thread (text is mrkdwn: escape what users or logs wrote); returns its ts. Raises
        SlackApiError when Slack refuses it."""
        self._require_thread()
        response = await self.client.chat_postMessage(
            channel=self.channel, thread_ts=self.thread_ts, **self._payload(text, blocks)
        )
        return response["ts"]

    async def update(self, ts: str, text: str, blocks: list[Block] | None = None) -> None:
        """Replace a message of this thread (an approval once decided, ...)."""
        await self.client.chat_update(channel=self.channel, ts=ts, **self._payload(text, blocks))

    async def post_approval(self, view: ApprovalView) -> str:
        return await self.post(approval_text(view), approval_blocks(view))

    async def update_approval(self, ts: str, view: ApprovalView) -> None:
        await self.update(ts, approval_text(view), approval_blocks(view))

    async def post_diagnosis(self, diagnosis: Diagnosis, approval: ApprovalView | None = None) -> str:
        return await self.post(diagnosis_text(diagnosis), diagnosis_blocks(diagnosis, approval=approval))

    # ----------------------------------------------------------------------------------------- replies

    async def _reply_for(self, event: Event) -> None:
        if isinstance(event, LogExcerpt):
            if event.requested:
                await self._drain_excerpts()  # (the follower's lines waiting to go out come before it)
                await self.post(f"logs: the last {len(event.lines)} lines", excerpt_blocks(event.lines, event.omitted))
            elif not (self._quiet_after_ready and self.board.steps["ready"].status == "done"):
                self._queue_excerpt(event)
            return
        if isinstance(event, Crashed):
            await self._drain_excerpts()
            self._crash_tail = list(event.tail) or None
            return
        if isinstance(event, Diagnosed):
            await self._drain_excerpts()
            self._crash_tail = None  # the diagnosis quotes its evidence
            approval = await self._approval_for(event.diagnosis) if self._approval_for else None
            await self.post_diagnosis(event.diagnosis, approval)
            return
        if isinstance(event, ApprovalRequested):
            await self._drain_excerpts()
            await self._ask_approval(event)
            return
        if isinstance(event, ApprovalDecided):
            await self._approval_decided(event)
            return
        reply = self._reply_text(event)
        if reply is not None:
            text, blocks = reply
            await self._drain_excerpts()  # earlier log lines come before what follows them
            await self.post(text, blocks)

    def _reply_text(self, event: Event) -> tuple[str, list[Block] | None] | None:
        if isinstance(event, Ready):
            text = "✅ " + escape(ready_text(event))
            if event.measured:
                text += f"\n_{escape(event.measured)}_"
            return text, None
        if isinstance(event, ParseFailed):
            return parse_error_text(event.error), None
        if isinstance(event, PlanRejected):
            return f"Plan rejected: {escape(event.failure.reason)}", plan_failure_blocks(event.failure)
        if isinstance(event, Failed):
            return f"❌ {escape_keeping_mentions(event.message)}", None
        if isinstance(event, Stopped):
            return f"⏹️ {escape_keeping_mentions(event.message)}", None
        if isinstance(event, Info):
            return f"ℹ️ {escape_keeping_mentions(event.message)}", None
        return None  # Parsed, Probed, Planned, Launched: the status message says it all

    # ----------------------------------------------------------------------------------------- approvals

    async def _ask_approval(self, event: ApprovalRequested) -> None:
        view = approval_view(event)
        ts = await self.post_approval(view)
        if self._refs is not None:
            await self._refs.save_approval(ApprovalMessage(
                approval_id=event.approval_id, channel=self.channel, ts=ts, thread_ts=self.thread_ts,
                status_ts=self.status_ts if self._status_message else None, view=view))

    async def _approval_decided(self, event: ApprovalDecided) -> None:
        if self._refs is None:
            log.warning("approval %s decided, but no refs to find its message by", event.approval_id)
            return
        message = await self._refs.approval(event.approval_id)
        if message is None:
            log.warning("approval %s decided, but its message is unknown (asked from another surface?)",
                        event.approval_id)
            return
        view = decided_view(message.view, event)
        # The message's own channel: a decision may be told in a thread object bound elsewhere.
        await self.client.chat_update(channel=message.channel, ts=message.ts,
                                      **self._payload(approval_text(view), approval_blocks(view)))
        await self._refs.save_approval(message.model_copy(update={"view": view}))
        if message.status_ts and (message.channel, message.status_ts) != (self.channel, self.status_ts):
            # The status message of the thread that asked shows the decision too (its approve row).
            await show_decision(self.client, self._refs, self._payload, event, channel=message.channel,
                                thread_ts=message.thread_ts, status_ts=message.status_ts)

    # ----------------------------------------------------------------------------------------- excerpts

    def _queue_excerpt(self, event: LogExcerpt) -> None:
        self._pending_lines.extend(event.lines)
        self._pending_cut += event.omitted
        if self._pump is None or self._pump.done():
            self._pump = asyncio.create_task(self._excerpt_pump(), name="slack-excerpt-pump")

    async def _excerpt_pump(self) -> None:
        loop = asyncio.get_running_loop()
        while self._pending_lines or self._pending_cut:
            if self._last_excerpt_at is not None and not self._send_now.is_set():
                delay = self._last_excerpt_at + self._config.excerpt_interval_s - loop.time()
                if delay > 0:
                    try:
                        await asyncio.wait_for(self._send_now.wait(), delay)
                    except asyncio.TimeoutError:
                        pass
            await self._send_excerpt()

    async def _send_excerpt(self) -> None:
        lines, cut = self._pending_lines, self._pending_cut
        self._pending_lines, self._pending_cut = [], 0  # lines arriving during the send wait for the next one
        keep = self._config.excerpt_max_lines
        if len(lines) > keep:
            cut += len(lines) - keep
            lines = lines[-keep:]
        self._last_excerpt_at = asyncio.get_running_loop().time()
        try:
            await self.post(f"log: {len(lines)} lines", excerpt_blocks(lines, cut))
        except _DELIVERY_ERRORS as exc:
            self._delivery_failed(f"log excerpt of {len(lines)} lines: {exc}")

    async def _drain_excerpts(self) -> None:
        """Send what is waiting now, ignoring the interval, and wait until it went out."""
        if not (self._pending_lines or self._pending_cut) and (self._pump is None or self._pump.done()):
            return
        self._send_now.set()
        try:
            if self._pump is None or self._pump.done():
                self._pump = asyncio.create_task(self._excerpt_pump(), name="slack-excerpt-pump")
            await self._pump
        finally:
            self._send_now.clear()

    # ----------------------------------------------------------------------------------------- helpers

    def _payload(self, text: str, blocks: list[Block] | None) -> dict[str, Any]:
        """The message body, every string redacted (the last guard: nothing secret leaves, whatever rendered it)."""
        payload: dict[str, Any] = {"text": self._redact(text)}
        if blocks is not None:
            payload["blocks"] = _redact_tree([block.to_dict() for block in blocks], self._redact)
        return payload

    def _require_thread(self) -> None:
        if self.thread_ts is None:
            raise RuntimeError("SlackThread.start() must run before messages can go into the thread")

    def _delivery_failed(self, what: str) -> None:
        log.warning("could not deliver to Slack channel %s: %s", self.channel, what)
        self.delivery_errors.append(what)
