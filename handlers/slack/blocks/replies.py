"""Replies in the channel and threads: the parent message (who asked what), a parse error with its suggestions, a
plan that does not fit, and help (the `/deploy` help and the words the bot reads in a deployment's thread)."""

from __future__ import annotations

import re

from slack_sdk.models.blocks import Block

from bot.models import ParseError, PlanFailure
from handlers.slack.blocks.mrkdwn import (
    MAX_MESSAGE_BLOCKS,
    MAX_SECTION_TEXT,
    bullets,
    clip,
    context,
    escape,
    mention,
    plural,
    section,
)


def parent_text(user: str, request_text: str) -> str:
    """The parent message in the channel: who asked, and what (quoted, escaped, shortened)."""
    quoted = "\n".join("> " + escape(line) for line in clip(request_text.strip(), 1000).splitlines() or [""])
    return f"{mention(user)} asked deploybot:\n{quoted}"


def parse_error_text(error: ParseError) -> str:
    text = f"❓ {escape(error.message)}"
    if error.suggestions:
        text += "\nTry: " + " · ".join(f"`{escape(s)}`" for s in error.suggestions[:5])
    return clip(text, MAX_SECTION_TEXT)


def plan_failure_blocks(failure: PlanFailure) -> list[Block]:
    text = f"🚫 *{escape(clip(failure.reason, 1000))}*"
    if failure.details:
        text += "\n" + bullets(failure.details, limit=MAX_SECTION_TEXT - len(text) - 300)
    if failure.nearest:
        text += f"\n*Nearest plan that would work:* {escape(clip(failure.nearest, 250))}"
    return [section(text)]


#: What a person can write in a deployment's thread (the bot reads replies there).
THREAD_COMMANDS: tuple[tuple[str, str], ...] = (
    ("status", "GPUs of the host and what runs there"),
    ("logs [N]", "the last N lines of the server's log (default 30, at most 200)"),
    ("stop", "stop this server (frees its GPUs and port)"),
    ("restart", "stop it and start it again with the same plan"),
    ("diagnose", "read the end of the log again and say what went wrong"),
    ("bench", "a short, bounded load: output tok/s, TTFT and ITL p50/p99, accept length at 1 and 8 concurrent"),
    ("help", "this list"),
)


def thread_help_text() -> str:
    rows = "\n".join(f"• `{name}`: {escape(what)}" for name, what in THREAD_COMMANDS)
    return f"In this thread I understand:\n{rows}"


def help_blocks(text: str) -> list[Block]:
    """Help text (mrkdwn, escaped so `<model>` placeholders show), one section per paragraph, within limits."""
    paragraphs = [p.strip("\n") for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]
    blocks: list[Block] = []
    for index, paragraph in enumerate(paragraphs):
        if len(blocks) == MAX_MESSAGE_BLOCKS - 1 and index < len(paragraphs) - 1:
            blocks.append(context(f"… {plural(len(paragraphs) - index, 'more paragraph')} not shown"))
            break
        blocks.append(section(escape(paragraph)))
    return blocks or [section("(no help text)")]

