"""Bounded tail reading: the end of a log, never the whole file.

Engine logs grow without limit (a server that ran for a week logs gigabytes of decode lines), and what explains a
crash is at the end. So we seek to ``size - max_bytes`` and read only from there: the cost is the same for a 1 KiB
log and a 1 GiB one.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The default bound used everywhere a log end is read (locally here, remotely with ``tail -c``). 256 KiB holds a
#: few thousand lines: every traceback in the corpus and the phase markers above it, with room to spare.
TAIL_BYTES: int = 256 * 1024
#: The longest line any rule reads: the follow agent cuts its lines at the same length (bot/agents/follow_agent.py).
#: No engine message is longer; a longer "line" is a progress bar, a dumped tensor or a hostile host.
MAX_LINE_CHARS: int = 4096


def read_tail(path: str | Path, max_bytes: int = TAIL_BYTES) -> str:
    """The last ``max_bytes`` of the file at ``path``, decoded as UTF-8 (bad bytes replaced).

    When the file is longer than the bound, the first (partial) line of the window is dropped so that every line
    returned is whole, unless the window holds no newline at all (one giant line), which is returned as is.
    Raises ``ValueError`` for a bound below 1 and the usual ``OSError`` for a missing or unreadable file.
    """
    if max_bytes < 1:
        raise ValueError(f"max_bytes must be at least 1, got {max_bytes}")
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        start = max(0, size - max_bytes)
        handle.seek(start)
        data = handle.read(max_bytes)
    if start > 0:
        newline = data.find(b"\n")
        if newline != -1:
            data = data[newline + 1:]
    return data.decode("utf-8", errors="replace")


def bound_text(text: str, max_chars: int = TAIL_BYTES, max_line_chars: int = MAX_LINE_CHARS) -> str:
    """``text`` with every line cut to its first ``max_line_chars`` characters, then to its last ``max_chars``
    characters (from a line boundary).

    This is what makes every pattern that reads host text run on bounded input, whatever the caller passed: the
    work of a rule then grows with the number of lines (bounded by the tail) times a bounded line, never with one
    line of 10 MB. Lines are cut first, so a huge last line does not push the traceback above it out of the window.
    """
    if any(len(line) > max_line_chars for line in text.split("\n")):
        text = "\n".join(line[:max_line_chars] for line in text.split("\n"))
    if len(text) > max_chars:
        window = text[-max_chars:]
        newline = window.find("\n")
        text = window[newline + 1:] if newline != -1 else window
    return text
