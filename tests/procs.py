"""Process checks shared by the tests."""

from __future__ import annotations

import time
from collections.abc import Callable


def pid_alive(pid: int) -> bool:
    """Running; a zombie (exited, not yet reaped: a container's init may be slow to) counts as gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_until(predicate: Callable[[], bool], *, what: str, timeout: float = 30.0) -> None:
    """Poll until ``predicate`` holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
