"""Mentions the bot writes itself, told apart from text a host or a user wrote.

Event messages mix the pipeline's own words ("stopped; it was started by @alice") with text from hosts and users
(an engine's error line, a remote command's stderr). On Slack, the pipeline's mentions must stay mentions while
anything a host wrote must show literally, even when it looks like ``<@U123>`` or ``<!channel>``. So the pipeline
never writes ``<@U…>`` itself: ``mention()`` writes a mark that holds a random key of this process, which text
from elsewhere cannot guess; the Slack renderer escapes everything and turns only marks with this key into
mentions (``resolve``). A mark with another key (a forgery) shows as plain ``@U…`` text, never a mention.

Text a surface keeps across a restart of the bot (a status board, an approval message) is saved with the key it was
written under (``key()``) and read back with ``rekey``: its marks become this process's, so the mentions written
before the restart stay mentions, while any other mark in it still shows as plain text.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable

_KEY = secrets.token_hex(6)
_SEP = "\x1f"  # ASCII unit separator: never shown, and no engine prints it
_USER_ID = re.compile(r"^[UW][A-Z0-9]{2,30}$")
_CHANNEL_ID = re.compile(r"^[CGD][A-Z0-9]{2,30}$")
_MARK = re.compile(_SEP + r"([@#][A-Z][A-Z0-9]{2,30})\.([0-9a-f]{12})" + _SEP)


def mention(user: str) -> str:
    """A mention of the Slack user ``user`` (an ID such as U0ALICE); any other name is returned as it is."""
    return f"{_SEP}@{user}.{_KEY}{_SEP}" if _USER_ID.match(user) else user


def mention_channel(channel: str) -> str:
    """A link to the Slack channel ``channel`` (an ID such as C0DEPLOY); any other name is returned as it is."""
    return f"{_SEP}#{channel}.{_KEY}{_SEP}" if _CHANNEL_ID.match(channel) else channel


def resolve(text: str, real: Callable[[str], str], forged: Callable[[str], str] | None = None) -> str:
    """``text`` with every mark replaced: ``real("@U…" or "#C…")`` for this process's marks, ``forged(...)`` for
    others (default: the plain ``@U…`` / ``#C…``)."""
    def one(match: re.Match[str]) -> str:
        target, key = match.group(1), match.group(2)
        if key == _KEY:
            return real(target)
        return forged(target) if forged is not None else target

    return _MARK.sub(one, text) if _SEP in text else text


def key() -> str:
    """The key of this process's marks, to save beside text that holds them (see ``rekey``)."""
    return _KEY


def rekey(text: str, written_under: str) -> str:
    """``text`` (saved with the key ``written_under``) with the marks of that key made marks of this process;
    every other mark is left as it is."""
    if written_under == _KEY or _SEP not in text:
        return text

    def one(match: re.Match[str]) -> str:
        target, mark_key = match.group(1), match.group(2)
        return f"{_SEP}{target}.{_KEY}{_SEP}" if mark_key == written_under else match.group(0)

    return _MARK.sub(one, text)


def plain(text: str) -> str:
    """For terminals and logs: every mark as ``@U…`` / ``#C…``."""
    return resolve(text, lambda target: target)
