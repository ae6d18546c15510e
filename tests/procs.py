"""Process checks shared by the tests."""

from __future__ import annotations


def pid_alive(pid: int) -> bool:
    """Running; a zombie (exited, not yet reaped: a container's init may be slow to) counts as gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
