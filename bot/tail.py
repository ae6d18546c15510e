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
