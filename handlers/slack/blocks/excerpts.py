"""Log excerpts: the newest lines that fit in one code block, and a note of what was cut."""

from __future__ import annotations

import re

from slack_sdk.models.blocks import Block

from handlers.slack.blocks.mrkdwn import MAX_SECTION_TEXT, context, cut_note, fit_code_block, section


def excerpt_blocks(lines: list[str], omitted: int) -> list[Block]:
    """A log excerpt as one code block (the newest lines that fit in 3000 characters), with a note of what was cut
    (`omitted` lines already cut by the caller plus any cut here). Lines must be redacted by the caller."""
    text, cut_here = fit_code_block(lines, budget=MAX_SECTION_TEXT)
    cut = omitted + cut_here
    blocks: list[Block] = []
    if cut:
        blocks.append(context(cut_note(cut)))
    if text is not None:
        blocks.append(section(text))
    if not blocks:
        blocks.append(context("(no output)"))
    return blocks


def excerpt_counts(blocks: list[Block]) -> tuple[int, int]:
    """(lines shown, lines cut) of blocks made by `excerpt_blocks`: what a reader of the message sees."""
    shown = cut = 0
    for block in blocks:
        data = block.to_dict()
        text = (data.get("text") or {}).get("text") or " ".join(e.get("text", "") for e in data.get("elements", []))
        if text.startswith("```"):
            shown += text.count("\n") - 1
        match = re.match(r"^… (\d+) lines? cut", text)
        if match:
            cut += int(match.group(1))
    return shown, cut

