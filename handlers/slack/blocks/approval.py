"""Approval messages: what and why, the command line's change, who asked; Approve / Deny buttons while pending,
the decision (who, when) after."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field
from slack_sdk.models.blocks import ActionsBlock, Block, ButtonElement, PlainTextObject

from bot.events import ApprovalDecided, ApprovalRequested
from bot.models import Frozen
from handlers.slack.blocks.mrkdwn import (
    MAX_SECTION_TEXT,
    bullets,
    clip,
    context,
    escape,
    escape_keeping_mentions,
    fallback_text,
    fit_code_block,
    mention,
    plural,
    section,
    utc_time,
)
from planners.argv import diff as argv_diff

APPROVE_ACTION_ID = "deploybot_approve"
DENY_ACTION_ID = "deploybot_deny"
APPROVAL_BLOCK_PREFIX = "deploybot_approval:"

ApprovalState = Literal["pending", "approved", "denied", "expired", "superseded"]


class ApprovalView(Frozen):
    """What an approval message shows; the store's approval row renders to this."""

    approval_id: str = Field(pattern=r"^[A-Za-z0-9_.:-]{1,100}$")  # goes into button values and block ids
    title: str
    why: list[str] = Field(default_factory=list)
    argv_diff: list[str] = Field(default_factory=list)
    requested_by: str
    expires_at: datetime
    state: ApprovalState = "pending"
    decided_by: str | None = None
    decided_at: datetime | None = None


_APPROVAL_ICON: dict[ApprovalState, str] = {
    "pending": "🔐",
    "approved": "✅",
    "denied": "⛔",
    "expired": "⌛",
    "superseded": "↪️",
}


def _decision_line(view: ApprovalView) -> str:
    at = f" at {utc_time(view.decided_at)}" if view.decided_at else ""
    by = f" by {mention(view.decided_by)}" if view.decided_by else ""
    if view.state == "approved":
        return f"Approved{by}{at}"
    if view.state == "denied":
        return f"Denied{by}{at}"
    if view.state == "expired":
        return f"Expired at {utc_time(view.decided_at or view.expires_at)}: nothing was changed"
    return f"Superseded by a newer plan{at}: nothing was changed"


def approval_blocks(view: ApprovalView) -> list[Block]:
    """The approval request: what and why, the argv change, who asked; buttons while pending, the decision after."""
    head = f"*{_APPROVAL_ICON[view.state]} {escape(clip(view.title, 200))}*"
    if view.why:
        head += "\n" + bullets(view.why, limit=MAX_SECTION_TEXT - len(head) - 1)
    blocks: list[Block] = [section(head)]
    if view.argv_diff:
        text, cut = fit_code_block(view.argv_diff, budget=MAX_SECTION_TEXT, keep="head")
        if text:
            blocks.append(section(text))
        if cut:
            blocks.append(context(f"… {plural(cut, 'more line')} not shown"))
    if view.state == "pending":
        blocks.append(
            context(f"Requested by {mention(view.requested_by)} · expires {utc_time(view.expires_at)}")
        )
        blocks.append(
            ActionsBlock(
                block_id=APPROVAL_BLOCK_PREFIX + view.approval_id,
                elements=[
                    ButtonElement(
                        text=PlainTextObject(text="Approve"),
                        action_id=APPROVE_ACTION_ID,
                        value=view.approval_id,
                        style="primary",
                    ),
                    ButtonElement(
                        text=PlainTextObject(text="Deny"),
                        action_id=DENY_ACTION_ID,
                        value=view.approval_id,
                        style="danger",
                    ),
                ],
            )
        )
    else:
        blocks.append(context(f"Requested by {mention(view.requested_by)} · {_decision_line(view)}"))
    return blocks


def approval_view(event: ApprovalRequested) -> ApprovalView:
    """The pending approval message for a pipeline's request: why, and what would change on the command line."""
    # A stop changes no command line: its reasons say whose server it is.
    shows_argv = event.plan is not None and event.action != "stop"
    return ApprovalView(
        approval_id=event.approval_id,
        title=event.title,
        why=list(event.reasons),
        argv_diff=argv_diff(event.previous_argv, event.plan.argv) if shows_argv and event.plan else [],
        requested_by=event.requested_by or "the terminal",
        expires_at=event.expires_at,
    )


def decided_view(view: ApprovalView, event: ApprovalDecided) -> ApprovalView:
    """The same approval once decided: who and when, no buttons."""
    return view.model_copy(update={"state": event.decision, "decided_by": event.decided_by,
                                   "decided_at": event.decided_at})


def approval_text(view: ApprovalView) -> str:
    if view.state == "pending":
        return fallback_text(f"Approval needed: {view.title}")
    return clip(f"{escape_keeping_mentions(view.title)}: {_decision_line(view)}", 300)  # the line is mrkdwn

