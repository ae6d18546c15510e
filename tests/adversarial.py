"""Adversarial log lines for the patterns that read host text: find each pattern's slowest input, then make it big.

Every compiled pattern of the modules that read engine logs (the diagnoser's rule tables, ``bot.lognorm``,
``bot.logevents``, ``bot.redact``) is collected by walking the modules, so a rule added later is checked without
anyone listing it. For each pattern the candidate inputs are periodic lines built from its own literal fragments and from characters
that the usual culprits (``[\\w-]+``, ``\\s*``, ``.*``) eat: a line such as ``"-" * n`` makes
``(--[\\w-]+)[^\\n]{0,120}\\b...`` try every split of the dashes from every start. The candidates are ranked by
time on a short line (cheap) and the worst few are used at full size (1 MB) by the test and the benchmark.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
import pkgutil
import re
import time
from collections.abc import Iterator

import bot.diagnose

try:  # Python 3.11+
    import re._constants as _sre_constants
    import re._parser as _sre_parse
except ImportError:  # pragma: no cover - older Pythons
    import sre_constants as _sre_constants  # type: ignore[no-redef]
    import sre_parse as _sre_parse  # type: ignore[no-redef]

#: Modules whose patterns run on text from a host (engine logs, tails): every module of the ``bot.diagnose`` package
#: (the rule tables may grow new modules) plus the log normaliser/event reader, the redactor and every registered
#: engine's log dialect and crash rules (``engine_modules``).
FIXED_MODULES = ("bot.logfields", "bot.lognorm", "bot.logevents", "bot.redact")


def engine_modules() -> list[str]:
    """Each registered engine package's logs.py and crash_rules.py (planners/engines/<name>/)."""
    from planners.engines import registry

    found = []
    for engine in registry.engines():
        package = type(engine).__module__.rpartition(".")[0]
        found += [f"{package}.{part}" for part in ("logs", "crash_rules") if importlib.util.find_spec(f"{package}.{part}")]
    return found

#: Characters and short units that typical backtracking culprits consume.
BASE_UNITS = ("a", "A", "1", " ", "\t", "-", ".", "_", "'", '"', "[", "(", "/", ":", "a.", "a ", "1 ", "a-", "a1",
              "--a ", "a_", "a=")

_REPEATS = (_sre_constants.MAX_REPEAT, _sre_constants.MIN_REPEAT,
            getattr(_sre_constants, "POSSESSIVE_REPEAT", _sre_constants.MAX_REPEAT))


def host_text_modules() -> list[str]:
    """The modules, each after the ones it imports from (so a table is named after the module that defines it)."""
    names = [info.name for info in pkgutil.walk_packages(bot.diagnose.__path__, "bot.diagnose.")]
    names = sorted(names) + list(FIXED_MODULES) + engine_modules()
    sources = {name: inspect.getsource(importlib.import_module(name)) for name in names}
    ordered: list[str] = []

    def place(name: str, stack: tuple[str, ...] = ()) -> None:
        if name in ordered or name in stack:
            return
        for other in names:
            if other != name and re.search(rf"^from {re.escape(other)} import", sources[name], re.MULTILINE):
                place(other, stack + (name,))
        ordered.append(name)

    for name in names:
        place(name)
    return ordered


def _collect(obj: object, name: str, out: dict[str, re.Pattern[str]], depth: int = 0) -> None:
    if isinstance(obj, re.Pattern):
        if isinstance(obj.pattern, str):
            out.setdefault(name, obj)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for field in dataclasses.fields(obj):
            _collect(getattr(obj, field.name), f"{name}.{field.name}", out, depth + 1)
    elif isinstance(obj, (tuple, list, frozenset, set)) and depth < 4:
        for index, item in enumerate(obj):
            label = getattr(item, "name", None)
            _collect(item, f"{name}[{label if isinstance(label, str) else index}]", out, depth + 1)
    elif isinstance(obj, dict) and depth < 4:
        for key, value in obj.items():
            _collect(value, f"{name}[{key}]", out, depth + 1)


def host_text_patterns() -> dict[str, re.Pattern[str]]:
    """Every compiled pattern reachable from the module globals of ``host_text_modules()``, by a readable name."""
    out: dict[str, re.Pattern[str]] = {}
    seen: set[int] = set()
    for module_name in host_text_modules():
        module = importlib.import_module(module_name)
        for attr, value in vars(module).items():
            if not attr.startswith("__") and not isinstance(value, type) and not callable(value) \
                    or isinstance(value, re.Pattern):
                found: dict[str, re.Pattern[str]] = {}
                _collect(value, f"{module_name}.{attr}", found)
                for name, pattern in found.items():  # a table imported by another module is checked once
                    if id(pattern) not in seen:
                        seen.add(id(pattern))
                        out[name] = pattern
    return out


def fragments(pattern: re.Pattern[str]) -> set[str]:
    """The literal runs of a pattern and one character of each class in it (what its quantifiers can eat)."""
    found: set[str] = set()

    def walk(tree: object) -> None:
        run: list[str] = []
        for op, arg in tree:  # type: ignore[attr-defined]
            if op is _sre_constants.LITERAL:
                run.append(chr(arg))
                continue
            if run:
                found.add("".join(run))
                run = []
            if op in _REPEATS:
                walk(arg[2])
            elif op is _sre_constants.SUBPATTERN:
                walk(arg[-1])
            elif op is getattr(_sre_constants, "ATOMIC_GROUP", None):
                walk(arg)
            elif op is _sre_constants.BRANCH:
                for branch in arg[1]:
                    walk(branch)
            elif op is _sre_constants.IN:
                for kind, value in arg:
                    if kind is _sre_constants.LITERAL:
                        found.add(chr(value))
                    elif kind is _sre_constants.RANGE:
                        found.add(chr(value[0]))
        if run:
            found.add("".join(run))

    walk(_sre_parse.parse(pattern.pattern, pattern.flags))
    return {f for f in found if f and "\n" not in f}


def periodic(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def candidate_units(pattern: re.Pattern[str]) -> Iterator[str]:
    for fragment in sorted(fragments(pattern) | set(BASE_UNITS)):
        yield fragment
        yield fragment + " "
        yield fragment + "a"
        yield fragment + "1"


def worst_units(pattern: re.Pattern[str], keep: int = 3, probe_size: int = 4096) -> list[str]:
    """The ``keep`` units whose periodic line of ``probe_size`` characters took this pattern longest to search."""
    timed: list[tuple[float, str]] = []
    for unit in candidate_units(pattern):
        line = periodic(unit, probe_size)
        started = time.perf_counter()
        pattern.search(line)
        timed.append((time.perf_counter() - started, unit))
    timed.sort(reverse=True)
    return [unit for _, unit in timed[:keep]]
