"""What changes between two command lines, flag by flag, for an approval message to show.

The reading and the diff are planners/argv.py's (the one argv reader); this module is where the Slack blocks find it.
"""

from __future__ import annotations

from planners.argv import diff


def argv_diff(old: list[str] | None, new: list[str]) -> list[str]:
    """`- --tp 1` / `+ --tp 2`, added and removed flags; without `old`, the full new command line, one flag a line."""
    return diff(old, new)
