"""The fields a wrapper's logger writes between a line's timestamp and its message: which level they carry, and where
the message starts (bot/logevents.normalize_line peels them off after the timestamp).
"""

from __future__ import annotations

import re

#: After a timestamp, pipe-separated fields of wrapper loggers: FastChat "| ERROR | stderr |", loguru "| INFO |".
_PIPE_FIELDS = re.compile(r"^\|\s*(?:(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|SUCCESS)\s*\|\s?)?"
                          r"(?:([\w.:<>-]{1,40})\s*\|\s?)?")
#: After a timestamp, Python logging's "%(asctime)s - %(name)s - %(levelname)s - %(message)s" (the logging cookbook's
#: format, which wrappers such as allenai/olmocr use to relay the engine's output: "2025-04-03 12:06:13,365 -
#: __main__ - INFO - Traceback ...").
_DASH_FIELDS = re.compile(r"^-\s{1,3}([\w.<>-]{1,60})\s{1,3}-\s{1,3}(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)"
                          r"\s{1,3}-(?:\s|$)")
#: After a timestamp, "<pid> <logger> <LEVEL> [<file>:<function>():<line>]", the format KServe's model servers log in
#: ("2024-07-01 07:28:04.488 1 kserve ERROR [__main__.py:<module>():254] Failed to start model server: ...").
_NAMED_LEVEL = re.compile(r"^(?:\d{1,10}\s{1,3})?[\w.-]{1,60}\s{1,3}(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s{1,3}"
                          r"\[[^\]\n]{1,160}\]\s?")
#: A wrapper relaying a child's output stream logs every line of it at one level of its own (FastChat: stdout at
#: INFO, stderr at ERROR): that level says which pipe, not how grave the line is.
_RELAYED_STREAMS = frozenset({"stdout", "stderr"})


def logger_fields(text: str) -> tuple[str, str | None]:
    """``text`` after a timestamp, without its logger's fields; and the level name they give ("ERROR"), if the line's
    own. Three formats, tried in turn: KServe's, Python logging's dashed one, the pipe-separated ones."""
    level: str | None = None
    named = _NAMED_LEVEL.match(text)
    if named:
        level = named.group(1)
        text = text[named.end():]
    dashed = _DASH_FIELDS.match(text)
    if dashed:
        # (a wrapper relaying the engine's lines logs them all at INFO: only a graver level is the line's)
        if dashed.group(2) not in ("DEBUG", "INFO"):
            level = level or dashed.group(2)
        text = text[dashed.end():]
    fields = _PIPE_FIELDS.match(text)
    if fields and fields.end():
        if fields.group(1) and fields.group(2) not in _RELAYED_STREAMS:
            level = level or fields.group(1)
        text = text[fields.end():]
    return text, level
