"""The values the diagnoser passes between its steps: a line of the tail, a finding (a cause with the
lines that show it), the advice for it, and the shape of one rule (data in rules.py, signals.py, structure_rules.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bot.models import Fix

if TYPE_CHECKING:
    from bot.diagnose.structure import TailStructure


@dataclass
class LogLine:
    """One line of the tail: where it is, what it says without prefixes, and whether it is traceback source code."""

    number: int  # 1-based line number within the tail as given
    raw: str
    text: str  # the message without prefixes
    level: str | None
    code: bool = False  # a source line quoted under a traceback frame, not a message


@dataclass
class Finding:
    """A cause found in the log: what it is, how sure, and the lines that show it."""

    category: str
    cause: str
    confidence: float
    kind: str | None = None
    decisive: LogLine | None = None
    match: re.Match[str] | None = None
    support: list[LogLine] = field(default_factory=list)
    rule: str | None = None
    pos: int = -1  # position of the decisive line in time order
    structure: TailStructure | None = None  # the tail's exceptions, exits and start-up phases (structure.py)
    alternatives: list[str] = field(default_factory=list)  # other categories the evidence also supports


#: Next steps and, where the remedy is a plan change, the fix.
Advice = tuple[list[str], Fix | None]


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
    #: Only lines logged at this level (a compiler's command line is routine output, unless a logger relays it as
    #: the ERROR of a failed build).
    level: str | None = None


#: NVIDIA's GPU generations by the names the engines' checks use ("only supported on Hopper", "Please use Blackwell
#: and above", "FlashAttention only supports Ampere GPUs or newer"): one list for every rule that reads them.
GPU_GENERATIONS = r"(?:Blackwell|Hopper|Ada(?: Lovelace)?|Ampere|Turing|Volta)"


def r(pattern: str) -> re.Pattern[str]:
    """Rules match case-insensitively."""
    return re.compile(pattern, re.IGNORECASE)
