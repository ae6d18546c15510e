"""The shape of one diagnoser rule (data in bot/diagnose_rules.py, bot/diagnose_rules_signals.py and
bot/diagnose_structure_rules.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    name: str
    category: str  # an id of tests/data/corpus/TAXONOMY.md, "other" for a known cause outside it, or OOM
    pattern: re.Pattern[str]
    priority: int
    confidence: float
    cause: str  # one line; "{0}", "{1}"... are the pattern's groups ("?" when absent)
    kind: str | None = None  # a finer reason the advice depends on ("raise", "lower", "context", "p2p", ...)
    any_level: bool = False  # also match lines logged at INFO/WARNING (NCCL WARN, Ray's worker-died warning, ...)
    exclude: re.Pattern[str] | None = None  # the same line matching this is not a hit (harmless variants)
    context: re.Pattern[str] | None = None  # must be seen within CONTEXT_LINES above the line
    #: Categories the same words also fit (a known ambiguity, e.g. "Transformers does not recognize this
    #: architecture" when the engine, not transformers, is too old): the verdict names them as its alternatives.
    unsure: tuple[str, ...] = ()


def r(pattern: str) -> re.Pattern[str]:
    """Rules match case-insensitively."""
    return re.compile(pattern, re.IGNORECASE)
