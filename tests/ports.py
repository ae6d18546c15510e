"""Port ranges for the simulated engines that no other test run on this machine plans at the same time.

The simulated engines listen on real ports of this machine, and several test runs share it (other worktrees'
suites, a fresh clone's `make test`). The planner takes the first port of the policy's range that the probe does not
see listening, so two runs on the same range race: both probe, both plan 30000, one engine dies with "address
already in use" (or an approved relaunch finds "its" port taken). A fixed or random range per test only makes the
race rarer.

So each pytest process takes a block of ports of its own, under an exclusive `flock` on a file named after the block
(held until the process exits: the kernel drops the lock even if the run is killed), and hands out slices of it in
turn: the slices of one run never meet another run's, and consecutive tests get different slices, so a test never
plans the port a just-finished test's server may still be leaving. Blocks lie below the kernel's ephemeral ports
(net.ipv4.ip_local_port_range starts at 32768 here; client sockets take those at random) and below the product's
default range (30000-30999), which runs of older checkouts still use.
"""

from __future__ import annotations

import fcntl
import os
import random
import tempfile
from pathlib import Path
from typing import IO

FIRST_PORT, END_PORT = 20000, 30000  # [20000, 30000): 20 blocks
BLOCK = 500
SLICE = 50  # ten slices of the default size per block before the first is handed out again
LOCK_DIR = Path(tempfile.gettempdir()) / "deploybot-test-ports"

_block: tuple[int, IO[str] | None] | None = None  # (first port, the open lock file that holds it)
_cursor = 0  # offset in the block of the next slice


def _claim_block() -> tuple[int, IO[str] | None]:
    LOCK_DIR.mkdir(parents=True, exist_ok=True)
    starts = list(range(FIRST_PORT, END_PORT, BLOCK))
    random.shuffle(starts)  # runs started together do not all try the same block first
    for start in starts:
        handle = open(LOCK_DIR / f"block-{start}.lock", "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        return start, handle
    # More runs at once than blocks: share one at random (what the tests did before), rather than fail.
    return random.choice(starts), None


def port_range(size: int = SLICE) -> list[int]:
    """[low, high] (inclusive, as app.yaml's policy.port_range): `size` ports of this test process's own block."""
    global _block, _cursor
    if not 0 < size <= BLOCK:
        raise ValueError(f"a port range of 1..{BLOCK} ports, not {size}")
    if _block is None:
        _block = _claim_block()
    if _cursor + size > BLOCK:
        _cursor = 0  # the oldest slices again: their tests ended long ago
    low = _block[0] + _cursor
    _cursor += size
    return [low, low + size - 1]
