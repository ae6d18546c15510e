"""Text for Slack's mrkdwn: escaping (only the bot's own mentions stay mentions), shortening within Slack's limits
(https://api.slack.com/reference/block-kit/blocks), code blocks and bullet lists that fit, and the small
section / context blocks every message is built from."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Literal, Sequence

from slack_sdk.models.blocks import ContextBlock, MarkdownTextObject, SectionBlock

from bot.mentions import resolve as resolve_mentions
from bot.models import GIB

# Slack's limits (https://api.slack.com/reference/block-kit/blocks).
MAX_MESSAGE_BLOCKS = 50
MAX_VIEW_BLOCKS = 100
MAX_SECTION_TEXT = 3000
MAX_CONTEXT_TEXT = 2000  # not enforced by slack_sdk; Slack rejects longer context texts
#: One log line longer than this is shortened in place: a single runaway line must not push out all the others.
MAX_LINE_CHARS = 400
#: A step's text on the status board; seven such lines stay well under one section's 3000 characters.
MAX_STEP_CHARS = 300


def escape(text: str) -> str:
    """Escape Slack's mrkdwn control characters (&, <, >) so user or log text shows literally, never as a link
    or a mention (`<!channel>`)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def escape_keeping_mentions(text: str) -> str:
    """`escape`, except that the mentions the bot wrote itself (``bot.mentions.mention``: `started by @alice`)
    become real mentions. Whatever a host or a user wrote is escaped, `<@U123>` and `<!channel>` included: only the
    bot's own marks, which hold a key of this process, turn into `<@U…>` / `<#C…>`."""
    return resolve_mentions(escape(text), lambda target: f"<{target}>")


def fallback_text(plain: str, limit: int = 300) -> str:
    """The `text` of a message that has blocks: what notifications, the sidebar and screen readers show. Slack
    reads it as mrkdwn too (a `<!channel>` in it notifies the channel), so it is escaped like the blocks are, with
    the bot's own mentions kept (bot.mentions); every message's fallback is built here."""
    return escape_keeping_mentions(clip(plain, limit))


def clip(text: str, limit: int) -> str:
    """Shorten `text` to `limit` characters, saying how much went."""
    if len(text) <= limit:
        return text
    # Room for the note is taken with the widest number it could show, so text and note stay within `limit`.
    keep = max(0, limit - len(f"… (+{len(text)} chars)"))
    return text[:keep] + f"… (+{len(text) - keep} chars)"


_USER_ID = re.compile(r"^[UW][A-Z0-9]{2,30}$")


def mention(user: str) -> str:
    """`<@U123>` for a Slack user ID (rendered as the person's name); anything else is shown as escaped text."""
    return f"<@{user}>" if _USER_ID.match(user) else escape(user)


def utc_time(moment: datetime) -> str:
    """`14:02 UTC` (naive datetimes are taken as UTC, as the store keeps them)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%H:%M UTC")


def gib(n_bytes: int | float) -> str:
    return f"{n_bytes / GIB:.1f} GiB"


def human_count(n: int) -> str:
    """412345 -> `412k`, 1_250_000 -> `1.25M` (KV-cache token counts read at a glance)."""
    if n >= 1_000_000:
        return f"{n / 1_000_000:.3g}M"
    if n >= 10_000:
        return f"{round(n / 1000)}k"
    return str(n)


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def mrkdwn(text: str) -> MarkdownTextObject:
    return MarkdownTextObject(text=text)


def section(text: str) -> SectionBlock:
    return SectionBlock(text=mrkdwn(clip(text, MAX_SECTION_TEXT)))


def context(text: str) -> ContextBlock:
    return ContextBlock(elements=[mrkdwn(clip(text, MAX_CONTEXT_TEXT))])


def cut_note(n_lines: int) -> str:
    return f"… {plural(n_lines, 'line')} cut"


def _code_safe(line: str) -> str:
    # A ``` inside the text would close the code block early; a zero-width space keeps the backticks visible.
    return escape(line).replace("```", "``\u200b`")


def fit_code_block(
    lines: Sequence[str], *, budget: int = MAX_SECTION_TEXT, keep: Literal["tail", "head"] = "tail"
) -> tuple[str | None, int]:
    """Fit whole lines into one mrkdwn code block of at most `budget` characters.

    Returns (the block's text or None when no line fits, the number of lines left out). `keep="tail"` keeps the
    newest lines (logs: what happened last matters most); `keep="head"` keeps the first ones (a diff, a list).
    """
    fence = "```\n", "\n```"
    room = budget - len(fence[0]) - len(fence[1])
    ordered = list(reversed(lines)) if keep == "tail" else list(lines)
    kept: list[str] = []
    used = 0
    for line in ordered:
        rendered = _code_safe(clip(line.rstrip("\n"), MAX_LINE_CHARS))
        cost = len(rendered) + (1 if kept else 0)
        if used + cost > room:
            break
        kept.append(rendered)
        used += cost
    if keep == "tail":
        kept.reverse()
    cut = len(lines) - len(kept)
    if not kept:
        return None, cut
    return fence[0] + "\n".join(kept) + fence[1], cut


def bullets(items: Sequence[str], *, limit: int = MAX_SECTION_TEXT) -> str:
    """An escaped bullet list that fits `limit`, ending with `… N more` when items were left out."""
    out: list[str] = []
    used = 0
    for index, item in enumerate(items):
        line = "• " + escape_keeping_mentions(clip(item, MAX_STEP_CHARS))
        more = f"\n… {len(items) - index} more"
        reserve = 0 if index == len(items) - 1 else len(more)  # the last item needs no room for a "more" note
        if used + len(line) + 1 + reserve > limit:
            out.append(more.strip())
            break
        out.append(line)
        used += len(line) + 1
    return "\n".join(out)


