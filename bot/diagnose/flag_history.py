"""When an engine refuses a flag: which captured release first has it, which renamed or removed it, and what the
installed release spells instead. The truth is the engines' own parsers as captured from their wheels
(bot/simhost/enginehelp, tools/capture_engine_help.py) and the renames diffed from them (planners/engines/<engine>/renames.py);
between captured releases the sentence says "among the captured releases", never a guessed version.
"""

from __future__ import annotations

import difflib
import json
from functools import lru_cache

from bot.simhost.captures import CAPTURES, capture_for, captured_versions
from planners.compat import at_least, engine_label, engine_name
from planners.engines import registry
from planners.flag_resolve import renames_of


@lru_cache(maxsize=16)
def captured_options(engine: str, version: str) -> frozenset[str]:
    """Every option string of the engine's parser in that captured release."""
    data = json.loads((CAPTURES / f"{engine}-{version}.json").read_text())
    return frozenset(option for action in data.get("actions", []) for option in action.get("options", []))


def _rename(engine: str, flag: str) -> dict | None:
    return next((row for row in renames_of(engine) if row["old"] == flag), None)


def flag_history(engine: str | None, flag: str, installed: str | None) -> str | None:
    """One sentence on ``flag`` across the captured releases of ``engine``, or None when nothing is known."""
    if engine is None or not registry.is_engine(engine) or not flag.startswith("--"):
        return None
    versions = captured_versions(engine)
    if not versions:
        return None
    row = _rename(engine, flag)
    if row is not None:
        successor = f"use {' / '.join(row['new'])}" if row["new"] else "it has no successor"
        return (f"{flag} was last in {engine_label(engine, row['last_with_old'])} and is gone from "
                f"{row['first_without']} on: {successor}")
    having = [v for v in versions if flag in captured_options(engine, v)]
    captured = ", ".join(versions)
    if having:
        first = having[0]
        if installed and at_least(installed, first) is False:
            return (f"{flag} first appears in {engine_label(engine, first)} among the captured releases ({captured}); "
                    f"this launch runs {installed}: upgrade, or relaunch without it")
        return None
    release = capture_for(engine, installed) if installed else versions[-1]
    close = difflib.get_close_matches(flag, sorted(captured_options(engine, release)), n=2, cutoff=0.75)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    return f"no captured {engine_name(engine)} release ({captured}) has {flag}{hint}"
