"""Mentions the bot writes itself, told apart from text a host or a user wrote.

Event messages mix the pipeline's own words ("stopped; it was started by @alice") with text from hosts and users
(an engine's error line, a remote command's stderr). On Slack, the pipeline's mentions must stay mentions while
anything a host wrote must show literally, even when it looks like ``<@U123>`` or ``<!channel>``. So the pipeline
never writes ``<@U…>`` itself: ``mention()`` writes a mark that holds a random key of this process, which text
from elsewhere cannot guess; the Slack renderer escapes everything and turns only marks with this key into
mentions (``resolve``). A mark with another key (a board saved before the bot restarted, or a forgery) shows as
plain ``@U…`` text, never a mention.
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


def plain(text: str) -> str:
    """For terminals and logs: every mark as ``@U…`` / ``#C…``."""
    return resolve(text, lambda target: target)
