"""What a traceback's own lines say when its exception line says little: read before any rule runs.

An exception a wrapper relayed at INFO is still an exception; a traceback cut before its exception line still shows
the raise statement; a bare "AssertionError" still shows the assert's condition under the innermost frame. Each
reading changes a line's ``text`` in place (its ``raw`` stays, and the evidence quotes the raw line)."""

from __future__ import annotations

import re
from dataclasses import replace

from bot.diagnose.structure import TailStructure
from bot.diagnose.types import Finding, LogLine

#: The levels the phrase rules skip unless a rule reads any level (bot/diagnose/match.py uses the same).
QUIET_LEVELS = ("DEBUG", "INFO", "WARNING")


def read_raised(lines: list[LogLine], structure: TailStructure) -> dict[int, int]:
    """All three readings; returns {a bare assert's exception line: its source line} (see ``quote_assert``)."""
    _unquiet_raised(lines, structure)
    _read_cut_raise(lines, structure)
    return _read_bare_asserts(lines, structure)


def quote_assert(finding: Finding, lines: list[LogLine], asserted: dict[int, int]) -> None:
    """A verdict decided on a bare assert quotes the assert's source line with it: "AssertionError" alone says
    nothing to the reader."""
    source = asserted.get(finding.pos)
    if source is not None and all(line.number != lines[source].number for line in finding.support):
        finding.support.append(lines[source])


def _unquiet_raised(lines: list[LogLine], structure: TailStructure) -> None:
    """An exception line that ends a traceback is an exception whatever level a wrapper relayed it at (Ray and
    FastChat re-log a child's stderr at INFO): the INFO/WARNING filter of the phrase rules must not hide it."""
    for exc in structure.exceptions:
        if exc.frames and 0 <= exc.pos < len(lines) and lines[exc.pos].level in QUIET_LEVELS:
            lines[exc.pos].level = None


#: A raise statement with its message as a literal ('raise ValueError(f"No supported config format found in
#: {model}.")'): the source line Python prints under the innermost frame.
_RAISE_LITERAL = re.compile(r"""^\s{0,40}raise ([A-Z]\w{0,60})\((?:[frbu]{1,2})?(["'])(.{4,300}?)\2""")
#: An assert statement without a message (one with a message prints it on the exception line itself).
_ASSERT_STATEMENT = re.compile(r"^\s{0,40}assert\s(?!.{0,300},\s{0,5}[frbu]{0,2}[\"'])(.{3,300}?)\s*$")


def _read_cut_raise(lines: list[LogLine], structure: TailStructure) -> None:
    """A traceback cut before its exception line still shows the raise statement: read its literal as the message
    (vllm-project/vllm's "No supported config format found" in a two-line paste), in place; the raw line stays.
    An assert statement there is an AssertionError whose condition is all it says (sgl-project/sglang#19587 ends on
    "assert param_data.shape == loaded_weight.shape")."""
    exc = structure.last_exception
    if exc is None or not exc.cut:
        return
    for pos in range(len(lines) - 1, max(-1, len(lines) - 6), -1):
        found = _RAISE_LITERAL.match(lines[pos].text) if lines[pos].code else None
        if found:
            lines[pos] = replace(lines[pos], text=f"{found.group(1)}: {found.group(3)}", code=False)
            return
        asserted = _ASSERT_STATEMENT.match(lines[pos].text) if lines[pos].code else None
        if asserted and exc.frames and exc.frames[-1].code.strip() == lines[pos].text.strip():
            lines[pos] = replace(lines[pos], text=f"AssertionError: {asserted.group(1)}", code=False)
            return


def _read_bare_asserts(lines: list[LogLine], structure: TailStructure) -> dict[int, int]:
    """A bare "AssertionError" says nothing; the assert statement Python printed under the innermost frame is its
    message (``assert self.total_num_kv_heads % tp_size == 0``, ``assert param_data.shape == loaded_weight.shape``):
    read it into the exception line, in place (the raw line stays), so the rules and the advice see the condition.
    Returns where each read assert is: {the exception line: the assert's source line}, for the evidence."""
    found: dict[int, int] = {}
    for exc in structure.exceptions:
        if exc.name != "AssertionError" or exc.message.strip() or not exc.frames or not 0 <= exc.pos < len(lines):
            continue
        asserted = _ASSERT_STATEMENT.match(exc.frames[-1].code)
        if asserted and lines[exc.pos].text.rstrip().endswith("AssertionError"):
            lines[exc.pos] = replace(lines[exc.pos], text=f"{lines[exc.pos].text.rstrip()}: {asserted.group(1)}")
            source = next((at for at in range(exc.pos - 1, max(-1, exc.pos - 4), -1)
                           if lines[at].code and lines[at].text.strip() == exc.frames[-1].code.strip()), None)
            if source is not None:
                found[exc.pos] = source
    return found
