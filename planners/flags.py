"""Check launch flags against the installed engine's own ``--help`` (argparse output), and suggest the closest name.

Only option *definitions* count as valid names: the usage block (``[--flag VALUE]``) and option lines (``  --flag
VALUE, --alias VALUE  description``). A flag mentioned inside a description ("use --new-flag instead") is not one.
"""

from __future__ import annotations

import difflib
import functools
import re

from pydantic import BaseModel, ConfigDict

from .argv import flags_in

_FLAG = r"--?[A-Za-z0-9][A-Za-z0-9_.-]*"
_USAGE_FLAG = re.compile(r"\[\s*(" + _FLAG + r")")
#: ... and the other members of a group argparse prints as one bracket: a BooleanOptionalAction's negative form and a
#: mutually exclusive pair ("[--enable-prefix-caching | --no-enable-prefix-caching]", vLLM's usage block)
_USAGE_ALTERNATIVE = re.compile(r"\|\s*(" + _FLAG + r")")
_USAGE_CHOICES = re.compile(r"\[\s*(" + _FLAG + r")\s+\{([^}]*)\}")
_OPTION_LINE = re.compile(r"^\s{0,12}(-{1,2}[A-Za-z0-9].*)$")
_CHOICES = re.compile(r"^(" + _FLAG + r")\s+\{([^}]*)\}")


class EngineHelp(BaseModel):
    model_config = ConfigDict(frozen=True)

    flags: frozenset[str]
    choices: dict[str, tuple[str, ...]]

    def knows(self, flag: str) -> bool:
        return flag in self.flags

    def looks_complete(self, core_flags: tuple[str, ...]) -> bool:
        """A help text that lacks the engine's core flags was cut or is a grouped summary: do not judge by it."""
        return all(flag in self.flags for flag in core_flags)


@functools.lru_cache(maxsize=32)
def parse_help(text: str) -> EngineHelp:
    """The flags and choices an engine's `--help` names. Cached by text (EngineHelp is frozen): a plan reads the same
    help several times (flags, memory, speculative options) and it is the same per host and engine version; parsing
    SGLang's 90 KB help took about 7 ms a time, most of a plan's CPU."""
    flags: set[str] = set()
    choices: dict[str, tuple[str, ...]] = {}
    in_usage = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.lower().startswith("usage:"):
            in_usage = True
        elif in_usage and not stripped:
            in_usage = False
        if in_usage:
            flags.update(_USAGE_FLAG.findall(line))
            flags.update(_USAGE_ALTERNATIVE.findall(line))
            for name, values in _USAGE_CHOICES.findall(line):
                choices[name] = tuple(c.strip() for c in values.split(",") if c.strip())
            continue
        match = _OPTION_LINE.match(line)
        if not match:
            continue
        # the option part ends where argparse puts two spaces before the description
        option_part = re.split(r"\s{2,}", match.group(1).strip(), maxsplit=1)[0]
        for item in option_part.split(", "):
            item = item.strip()
            name = re.match(_FLAG, item)
            if not name:
                continue
            flags.add(name.group(0))
            choice = _CHOICES.match(item)
            if choice:
                choices[name.group(0)] = tuple(c.strip() for c in choice.group(2).split(",") if c.strip())
    flags.discard("-")
    return EngineHelp(flags=frozenset(flags), choices=choices)


def _words(flag: str) -> set[str]:
    return {w for w in re.split(r"[-_.]", flag.lstrip("-").lower()) if w}


def closest_flag(flag: str, known: frozenset[str] | set[str]) -> str | None:
    """The valid flag a person most likely meant: shared words first, spelling second."""
    if not known:
        return None
    wanted = _words(flag)
    best: tuple[float, str] | None = None
    for candidate in known:
        if not candidate.startswith("--"):
            continue
        words = _words(candidate)
        overlap = len(wanted & words) / len(wanted | words) if wanted | words else 0.0
        spelling = difflib.SequenceMatcher(None, flag.lower(), candidate.lower()).ratio()
        # every asked word present in the candidate ("--speculative-draft-tokens" in
        # "--speculative-num-draft-tokens") is the strongest sign; spelling breaks ties and catches typos
        contains = 1.0 if wanted and wanted <= words else 0.0
        score = 0.45 * spelling + 0.35 * overlap + 0.2 * contains
        if best is None or score > best[0]:
            best = (score, candidate)
    if best is None or best[0] < 0.5:
        return None
    return best[1]


def suggest_flag(flag: str, help_text: str) -> str | None:
    """``--speculative-draft-tokens`` -> ``--speculative-num-draft-tokens``; None when nothing is close."""
    help_ = parse_help(help_text)
    if flag in help_.flags:
        return flag
    return closest_flag(flag, help_.flags)


class FlagProblem(BaseModel):
    model_config = ConfigDict(frozen=True)

    flag: str
    message: str
    suggestion: str | None = None


def validate_argv(args: list[str], help_: EngineHelp) -> list[FlagProblem]:
    """Unknown flags (with the closest valid name) and values outside a flag's listed choices."""
    problems: list[FlagProblem] = []
    for _, flag, value in flags_in(args):
        if flag not in help_.flags:
            suggestion = closest_flag(flag, help_.flags)
            hint = f"; did you mean {suggestion}?" if suggestion else ""
            problems.append(FlagProblem(flag=flag, message=f"unknown flag {flag}{hint}", suggestion=suggestion))
        elif value is not None and flag in help_.choices and value not in help_.choices[flag]:
            allowed = ", ".join(help_.choices[flag])
            problems.append(FlagProblem(flag=flag, message=f"{flag} {value}: not one of {allowed}"))
    return problems
