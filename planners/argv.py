"""The one reading of a launch argv: which tokens are flags, which are their values, what changed between two.

Every part of deploybot that looks inside an argv (the planner's overrides and build fitting, the diagnoser reading
a flag's value, the surfaces showing a diff) reads it here. Where an engine's own flags start is the engine's to
say (``Engine.flags_start``: after ``python -m module``, or after a binary), never a fixed ``argv[3:]``.

A token is a flag when it starts with "-" and is not a negative number ("-1") nor a lone "-"; ``--flag=value``
counts as ``--flag value``. A flag's value is the next token unless that is itself a flag.
"""

from __future__ import annotations

import re
import shlex
from typing import TYPE_CHECKING, Iterable, NamedTuple

if TYPE_CHECKING:
    from .engines.base import Engine

_NEGATIVE_NUMBER = re.compile(r"^-\d")


class Option(NamedTuple):
    position: int  # of the flag's token
    flag: str
    value: str | None
    inline: bool  # given as --flag=value


def is_flag(token: str) -> bool:
    return token.startswith("-") and token != "-" and not _NEGATIVE_NUMBER.match(token)


def options(argv: list[str]) -> list[Option]:
    """Every option of an argv, in order."""
    found: list[Option] = []
    for i, token in enumerate(argv):
        if not is_flag(token):
            continue
        name, eq, inline = token.partition("=")
        if eq:
            found.append(Option(i, name, inline, True))
        else:
            value = argv[i + 1] if i + 1 < len(argv) and not is_flag(argv[i + 1]) else None
            found.append(Option(i, name, value, False))
    return found


def flags_in(argv: list[str]) -> list[tuple[int, str, str | None]]:
    """(position, flag, value) for every option in an argv."""
    return [(o.position, o.flag, o.value) for o in options(argv)]


def value_of(argv: list[str], names: Iterable[str]) -> str | None:
    """The value of the first of ``names`` present (``_`` and ``-`` in names are the same), or None."""
    wanted = {name.replace("_", "-") for name in names}
    for option in options(argv):
        if option.flag.replace("_", "-") in wanted and option.value is not None:
            return option.value
    return None


def remove(argv: list[str], names: Iterable[str]) -> tuple[list[str], list[str]]:
    """argv without the named flags and their values; also returns the flags actually removed."""
    wanted = set(names)
    drop: set[int] = set()
    removed: list[str] = []
    for option in options(argv):
        if option.flag in wanted:
            removed.append(option.flag)
            drop.add(option.position)
            if option.value is not None and not option.inline:
                drop.add(option.position + 1)
    return [t for i, t in enumerate(argv) if i not in drop], removed


def split(argv: list[str], engine: Engine) -> tuple[list[str], list[str]]:
    """(the launcher: interpreter and module, or the binary; the engine's own arguments)."""
    start = engine.flags_start(argv)
    return argv[:start], argv[start:]


def groups(argv: list[str]) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """Split argv into its leading words (program, subcommand, positionals) and (flag, values) groups; a flag's
    values are the words up to the next flag (``--flag=value`` counts as ``--flag value``)."""
    head: list[str] = []
    found: list[tuple[str, list[str]]] = []
    for token in argv:
        if is_flag(token):
            name, sep, value = token.partition("=") if token.startswith("--") else (token, "", "")
            found.append((name, [value] if sep else []))
        elif found:
            found[-1][1].append(token)
        else:
            head.append(token)
    return head, found


def _keyed(flag_groups: list[tuple[str, list[str]]]) -> dict[tuple[str, int], list[str]]:
    # A flag given twice (`--env A --env B`) is kept as two entries: its first, its second occurrence.
    seen: dict[str, int] = {}
    keyed: dict[tuple[str, int], list[str]] = {}
    for name, values in flag_groups:
        occurrence = seen.get(name, 0)
        seen[name] = occurrence + 1
        keyed[(name, occurrence)] = values
    return keyed


def _show(name: str, values: list[str]) -> str:
    return shlex.join([name, *values])


def diff(old: list[str] | None, new: list[str]) -> list[str]:
    """What changes between two command lines, flag by flag: `- --tp 1` / `+ --tp 2`, added and removed flags.

    Without `old`, the full new command line, one flag (with its values) per line.
    """
    new_head, new_groups = groups(new)
    if old is None:
        full = [shlex.join(new_head)] if new_head else []
        return full + [_show(name, values) for name, values in new_groups]
    old_head, old_groups = groups(old)
    lines: list[str] = []
    if old_head != new_head:
        lines += [f"- {shlex.join(old_head)}", f"+ {shlex.join(new_head)}"]
    old_keyed, new_keyed = _keyed(old_groups), _keyed(new_groups)
    for key, values in new_keyed.items():
        before = old_keyed.get(key)
        if before is None:
            lines.append(f"+ {_show(key[0], values)}")
        elif before != values:
            lines += [f"- {_show(key[0], before)}", f"+ {_show(key[0], values)}"]
    for key, values in old_keyed.items():
        if key not in new_keyed:
            lines.append(f"- {_show(key[0], values)}")
    return lines
