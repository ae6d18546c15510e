"""A diagnosis: its cause, the evidence lines from the log, next steps, the proposed fix, then its approval."""

from __future__ import annotations

from slack_sdk.models.blocks import Block, DividerBlock

from bot.models import Diagnosis
from handlers.slack.blocks.approval import ApprovalView, approval_blocks
from handlers.slack.blocks.mrkdwn import (
    MAX_SECTION_TEXT,
    bullets,
    clip,
    context,
    cut_note,
    escape,
    fallback_text,
    fit_code_block,
    section,
)


def diagnosis_blocks(d: Diagnosis, *, approval: ApprovalView | None) -> list[Block]:
    """Cause, the evidence lines from the log (a code block), next steps, the proposed fix, then the approval."""
    unsure = f" · unsure between {escape(', '.join([d.category, *d.alternatives]))}" if d.alternatives else ""
    head = (f"🩺 *{escape(clip(d.cause, 1500))}*\n_category `{escape(d.category)}` · confidence "
            f"{d.confidence:.0%}{unsure}_")
    blocks: list[Block] = [section(head)]
    if d.evidence:
        width = len(str(max(e.line for e in d.evidence)))
        text, cut = fit_code_block([f"{e.line:>{width}}: {e.text}" for e in d.evidence], keep="head")
        blocks.append(context("Evidence from the log" + (f" ({cut_note(cut)})" if cut else "") + ":"))
        if text:
            blocks.append(section(text))
    if d.next_steps:
        blocks.append(section("*Next steps*\n" + bullets(d.next_steps, limit=MAX_SECTION_TEXT - 20)))
    if d.fix is not None:
        blocks.append(section(f"🔧 *Proposed fix:* {escape(clip(d.fix.summary, 1000))}"))
    if approval is not None:
        blocks.append(DividerBlock())
        blocks.extend(approval_blocks(approval))
    return blocks


def diagnosis_text(d: Diagnosis) -> str:
    return fallback_text(f"Diagnosis: {d.cause}")

