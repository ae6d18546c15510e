"""The Engine protocol: everything deploybot knows about one inference engine, behind one interface.

An engine package (planners/engines/<name>/) provides one object that satisfies ``Engine`` and is listed in
planners/engines/registry.py. The planner, the log reader, the diagnoser and the parser ask the engine instead of
spelling its name: which flags it owns and how it spells a neutral setting (``flag("mem_fraction")``), how it is
found on a host, how its --help is read, how its launch argv is built, how it budgets GPU memory, what its log
lines look like and which crash lines are its own.

Pieces here are plain frozen data (``Discovery``, ``CrashRule``; the log's ``LogDialect`` is in logdialect.py) so an
engine is mostly tables; ``EngineBase`` gives the behaviour every engine shares (flag lookup through the help text and the captured renames,
the argparse help parser, where the flags of an argv start).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..flags import EngineHelp, parse_help
from .logdialect import LogDialect

if TYPE_CHECKING:
    from bot.models import EngineInstall, HostFacts, PlanFailure, Risk

    from ..fit import EngineState, Fit, PlanContext, Slot
    from ..model import ModelSpec

#: Neutral ids of the settings the planner, the diagnoser and the advice name; each engine spells them its own way.
#: An engine that has no such setting maps the id to "" (``flag`` then raises KeyError, which is a bug to fix).
NEUTRAL_FLAGS: tuple[str, ...] = (
    "model",
    "host",
    "port",
    "served_name",
    "tp",
    "mem_fraction",
    "context",
    "max_running",
    "graph_bs",
    "no_graph",
    "batch_tokens",
    "kv_cache_dtype",
    "quantization",
    "trust_remote_code",
)


@dataclass(frozen=True)
class CrashRule:
    """An engine-specific diagnoser rule, as data (the same fields as bot/diagnose/types.py's Rule, so the
    diagnoser can turn it into one without planners importing the diagnoser)."""

    name: str
    category: str
    pattern: re.Pattern[str]
    priority: int
    confidence: float
    cause: str
    kind: str | None = None
    any_level: bool = False
    exclude: re.Pattern[str] | None = None
    context: re.Pattern[str] | None = None
    unsure: tuple[str, ...] = ()
    level: str | None = None


@dataclass(frozen=True)
class Discovery:
    """How the engine is found on a host: a Python package run as ``python -m module``, or a binary on PATH."""

    #: The distribution / import name the probe looks up (``importlib.metadata.version``); None for a binary.
    package: str | None = None
    #: ``python -m <module>`` starts the server; None when the engine is a binary.
    module: str | None = None
    #: The executable name for a binary engine (``llama-server``); None for a Python package.
    binary: str | None = None
    #: argv (after the interpreter or the binary) that prints the version, and the one that prints the flags.
    version_args: tuple[str, ...] = ("--version",)
    help_args: tuple[str, ...] = ("--help",)
    #: Substrings of a running server's command line that say it is this engine (the probe's ``ps`` reading).
    cmdline_marks: tuple[str, ...] = ()

    def launcher(self, python: str) -> list[str]:
        """The argv prefix that starts the server: ``python -m module`` or the binary."""
        if self.module:
            return [python, "-m", self.module]
        if self.binary:
            return [self.binary]
        raise ValueError("an engine needs a module or a binary")

    def help_command(self, python: str) -> list[str]:
        return [*self.launcher(python), *self.help_args]


#: Uvicorn's own start line (the web server under both Python engines' OpenAI servers): the server's URL.
@dataclass(frozen=True)
class SupportRow:
    """What an engine's releases serve of one architecture (planners/compat.py reads every engine's rows)."""

    minimum: str | None = None  # the first release that serves it (None: no known minimum)
    known_good: str | None = None  # below this it works with known problems (an old_engine risk)
    #: the first release with an MTP drafter for it ("0": wherever the architecture is); None: no drafter
    mtp: str | None = None
    trust_remote_code: bool = False  # the engine's documented launch line for it passes --trust-remote-code
    source: str = ""


@dataclass(frozen=True)
class NameRule:
    """A model-name rule layered on the architecture (same class, newer weights that need a newer release)."""

    pattern: re.Pattern[str]
    minimum: str
    source: str


@runtime_checkable
class Engine(Protocol):
    """One engine. See EngineBase for the parts every engine shares."""

    name: str  # the canonical id stored in requests and plans ("sglang")
    label: str  # how people write it ("SGLang")
    aliases: tuple[str, ...]  # other words that mean it in a request ("sgl", "sg-lang")
    discovery: Discovery
    core_flags: tuple[str, ...]  # every complete --help of it lists these (a text without them was cut)
    flag_names: dict[str, str | None]  # neutral flag id -> this engine's default spelling (None: it has none)
    dialect: LogDialect
    crash_rules: tuple[CrashRule, ...]
    renames: tuple[dict[str, Any], ...]  # flag renames between the captured releases (tools/engine_renames.py)
    known_good: str  # below this release the planner's memory model may not describe the engine
    issues_url: str  # where its bugs are filed
    support: dict[str, SupportRow]  # architecture -> what its releases serve (compatibility rows)
    name_rules: tuple[NameRule, ...]

    @property
    def owned_flags(self) -> frozenset[str]: ...  # the plan sets these itself; extra_args may not set them again
    def words(self) -> tuple[str, ...]: ...
    def has_flag(self, name: str) -> bool: ...
    def installed(self, facts: HostFacts) -> EngineInstall | None: ...
    def serves(self, cmdline: str) -> bool: ...
    def flag(self, name: str, version: str | None = None, help_: EngineHelp | None = None) -> str: ...
    def parse_help(self, text: str) -> EngineHelp: ...
    def flags_start(self, argv: list[str]) -> int: ...
    def launcher(self, python: str) -> list[str]: ...
    def help_complete(self, help_: EngineHelp | None) -> bool: ...

    # its memory model (planners/fit.py and memory.py ask it; see sglang/memory.py, vllm/memory.py)
    sliding_as_full: bool  # its pool counts sliding-window layers as full attention
    def state(self, ctx: PlanContext, slot: Slot, version: str | None) -> EngineState: ...
    def fractions(self, ctx: PlanContext, slot: Slot) -> list[tuple[float, str]]: ...  # default first
    def overhead(self, ctx: PlanContext, slot: Slot) -> int | None: ...
    def draft_extra_bytes(self, spec: ModelSpec, tp: int) -> int: ...
    def split_budget(
        self, fraction: float, total: int, free: int, weights: int, draft: int, overhead: int | None
    ) -> BudgetSplit: ...

    # compatibility and argv
    def fp8_below_native(self, cc: tuple[int, int]) -> tuple[str, str]: ...
    def build_argv(self, ctx: PlanContext, fit: Fit, inputs: ArgvInputs) -> list[str] | PlanFailure: ...
    def removal_risks(self, removed: list[str], mtp: bool) -> list[Risk]: ...


@dataclass(frozen=True)
class BudgetSplit:
    """How an engine splits one GPU at a memory fraction (planners/memory.py's budget fills in the rest)."""

    overhead: int  # inside the engine's budget besides weights, draft and KV (vLLM's activations etc.)
    headroom: int  # kept outside the budget for activations/graphs (SGLang) or unused (vLLM)
    pool: int  # what is left for KV + per-request state (negative: weights do not fit)
    startup_ok: bool = True  # the engine starts with this much free memory
    notes: tuple[str, ...] = ()


@dataclass
class ArgvInputs:
    """What the engine-neutral planner decided before the engine writes its argv. The engine appends to
    ``reasons`` and ``risks`` and may set ``env``."""

    version: str | None
    help_: EngineHelp | None
    context: int
    trust_remote_code: bool
    quantization: str | None  # the --quantization value, when the plan quantizes online
    mtp: bool
    reasons: list[str]
    risks: list[Risk]
    env: dict[str, str]


class EngineBase:
    """Behaviour every engine shares; an engine class sets the data attributes and the engine-specific methods."""

    name: str
    label: str
    aliases: tuple[str, ...] = ()
    discovery: Discovery
    core_flags: tuple[str, ...]
    flag_names: dict[str, str | None]
    #: neutral id -> other spellings some releases use, tried against the help text in order after the default
    flag_alternatives: dict[str, tuple[str, ...]] = {}
    #: neutral id -> ((first release, spelling), ...) oldest first, where the captured releases spell it differently
    flag_history: dict[str, tuple[tuple[str, str], ...]] = {}
    dialect: LogDialect
    crash_rules: tuple[CrashRule, ...] = ()
    renames: tuple[dict[str, Any], ...] = ()
    known_good: str = "0"
    issues_url: str = ""
    support: dict[str, SupportRow] = {}
    name_rules: tuple[NameRule, ...] = ()

    @property
    def owned_flags(self) -> frozenset[str]:
        owned = ("model", "host", "port", "served_name", "tp", "mem_fraction", "context")
        names = {self.flag_names[n] for n in owned if self.flag_names.get(n)}
        names |= {a for n in owned for a in self.flag_alternatives.get(n, ())}
        return frozenset(names)

    def words(self) -> tuple[str, ...]:
        """Every word that names this engine in a request, lower case."""
        return (self.name, *self.aliases)

    def has_flag(self, name: str) -> bool:
        """Whether this engine has a setting for the neutral id (an engine lists the ids it lacks as None)."""
        return bool(self.flag_names.get(name))

    def installed(self, facts: HostFacts) -> EngineInstall | None:
        """The probe's record of this engine on the host (its package, or its binary), None when absent."""
        return facts.engines.get(self.name)

    def serves(self, cmdline: str) -> bool:
        """Whether a running process's command line is a server of this engine (the probe's process list)."""
        return any(mark in cmdline for mark in self.discovery.cmdline_marks)

    def flag(self, name: str, version: str | None = None, help_: EngineHelp | None = None) -> str:
        """This engine's spelling of a neutral setting: the one this build's --help lists when given, else the one
        a release of ``version`` uses by the captured renames, else the default."""
        default = self.flag_names.get(name)
        if not default:
            raise KeyError(f"{self.label} has no flag for {name!r}")
        candidates = (default, *self.flag_alternatives.get(name, ()))
        if help_ is not None:
            known = next((c for c in candidates if help_.knows(c)), None)
            if known:
                return known
            from ..flag_resolve import successor  # noqa: PLC0415  (flag_resolve asks the registry)

            names, _ = successor(self.name, default, help_)
            return names[0] if names else default
        if version is not None:
            from ..flag_resolve import flag_for_version  # noqa: PLC0415

            return flag_for_version(self.name, self._spelling_at(name, version) or default, version)[0]
        return default

    def _spelling_at(self, name: str, version: str) -> str | None:
        from ..compat import at_least  # noqa: PLC0415  (compat imports the domain, which asks the registry)

        spelled = None
        for first, spelling in self.flag_history.get(name, ()):
            verdict = at_least(version, first)
            if verdict is None:
                return None
            if verdict:
                spelled = spelling
        return spelled

    def parse_help(self, text: str) -> EngineHelp:
        """argparse-style help (``  --flag VALUE, --alias VALUE  text``); an engine with another format overrides."""
        return parse_help(text)

    def launcher(self, python: str) -> list[str]:
        return self.discovery.launcher(python)

    def flags_start(self, argv: list[str]) -> int:
        """Index of the first engine flag in a launch argv: after ``python -m module`` or after the binary."""
        for i, token in enumerate(argv):
            if token.startswith("-") and not (self.discovery.module and token == "-m"):
                return i
        return len(argv)

    def help_complete(self, help_: EngineHelp | None) -> bool:
        return bool(help_ and help_.looks_complete(self.core_flags))

    def removal_risks(self, removed: list[str], mtp: bool) -> list[Risk]:
        return []

    def check_mtp_method(self, spec: ModelSpec, version: str | None) -> str | None:
        return None

    def drafter_problem(
        self, kind: str, version: str | None, help_: EngineHelp | None, extra_args: list[str]
    ) -> str | None:
        """Why this release cannot run a separate drafter of this kind (dflash | eagle3 | draft), naming the release
        that added it, or a layout the method refuses; None when it can. An engine without drafters says so."""
        return f"deploybot does not know how {self.label} runs a separate drafter"

    def __repr__(self) -> str:
        return f"<engine {self.name}>"
