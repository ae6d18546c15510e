"""What changes between two command lines, flag by flag, for an approval message to show."""

from __future__ import annotations

import re
import shlex

_NEGATIVE_NUMBER = re.compile(r"^-\d")


def _is_flag(token: str) -> bool:
    return token.startswith("-") and token != "-" and not _NEGATIVE_NUMBER.match(token)


def _flag_groups(argv: list[str]) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """Split argv into its leading words (program, subcommand, positionals) and (flag, values) groups.

    `--flag=value` counts as `--flag value`; a flag's values are the words up to the next flag.
    """
    head: list[str] = []
    groups: list[tuple[str, list[str]]] = []
    for token in argv:
        if _is_flag(token):
            name, sep, value = token.partition("=") if token.startswith("--") else (token, "", "")
            groups.append((name, [value] if sep else []))
        elif groups:
            groups[-1][1].append(token)
        else:
            head.append(token)
    return head, groups


def _keyed(groups: list[tuple[str, list[str]]]) -> dict[tuple[str, int], list[str]]:
    # A flag given twice (`--env A --env B`) is kept as two entries: its first, its second occurrence.
    seen: dict[str, int] = {}
    keyed: dict[tuple[str, int], list[str]] = {}
    for name, values in groups:
        occurrence = seen.get(name, 0)
        seen[name] = occurrence + 1
        keyed[(name, occurrence)] = values
    return keyed


def _show(name: str, values: list[str]) -> str:
    return shlex.join([name, *values])


def argv_diff(old: list[str] | None, new: list[str]) -> list[str]:
    """What changes between two command lines, flag by flag: `- --tp 1` / `+ --tp 2`, added and removed flags.

    Without `old`, the full new command line, one flag (with its values) per line.
    """
    new_head, new_groups = _flag_groups(new)
    if old is None:
        full = [shlex.join(new_head)] if new_head else []
        return full + [_show(name, values) for name, values in new_groups]
    old_head, old_groups = _flag_groups(old)
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

