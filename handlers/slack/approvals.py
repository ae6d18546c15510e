"""Approve / Deny clicks and the expiry of approvals nobody answered.

A click calls `Pipeline.decide`, which is one-shot and bound to the plan's hash; a click that is refused (not an
approver, own request, expired, already decided) is answered to the clicker only. The decision is told where the
request was asked: a launch or stop goes on in its status message; a relaunch after a crash is a new deployment
with its own status message in the same thread.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond

from bot.events import ApprovalDecided
from bot.models import utcnow
from handlers.slack.blocks.approval import APPROVE_ACTION_ID
from handlers.slack.blocks.mrkdwn import escape_keeping_mentions
from handlers.slack.board import StatusBoard, StepState
from handlers.slack.refs import ApprovalMessage
from handlers.slack.stories import Surface, Told
from handlers.slack.thread import SlackThread

log = logging.getLogger(__name__)

#: How long a click waits for its approval message's ref to be saved (see _clicked_approval_message).
APPROVAL_REF_WAIT_STEPS = 20
APPROVAL_REF_WAIT_STEP_S = 0.1


class ApprovalClicks:
    """The approval buttons of one Slack surface, and the sweep that expires what nobody clicked."""

    def __init__(self, surface: Surface) -> None:
        self.surface = surface
        self.pipeline = surface.pipeline
        self.store = surface.store
        self.refs = surface.refs
        self.until_ready = surface.until_ready

    async def on_click(self, ack: AsyncAck, body: dict[str, Any], action: dict[str, Any],
                       respond: AsyncRespond) -> None:
        await ack()
        approve = action.get("action_id") == APPROVE_ACTION_ID
        user = body.get("user", {}).get("id", "")
        self.surface.spawn(self._decide(str(action.get("value", "")), user, approve, body, respond),
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
        told = Told(thread, self.store, self.surface.acks)
        outcome = await self.surface.run(thread, self.pipeline.decide(approval_id, user, approve, told,
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
                return self.surface.thread(channel, thread_ts=thread_ts, status_ts=message.status_ts, board=board)
        title = message.view.title if message is not None else row["action"]
        # The message's reasons were read back with this process's marks (refs); the store's row keeps them as the
        # pipeline wrote them, before any restart.
        reasons = message.view.why if message is not None else row["data"].get("reasons") or []
        board = StatusBoard(title=title, action="stop" if row["action"] == "stop" else "start")
        board.steps["parse"] = StepState(status="done", text="; ".join(reasons) or title)
        board.steps["approve"] = StepState(status="running", text="waiting for an approver")
        # Posted on its first change: a refused click leaves no trace in the channel.
        return self.surface.thread(channel, thread_ts=thread_ts, board=board)

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

