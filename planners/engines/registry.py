"""The set of engines deploybot knows: derived here and nowhere else.

Adding an engine is one package under planners/engines/ plus one line in ``_BUILTIN``; a test registers its own
with ``register``. Order matters: when several engines are installed and none is asked for, the first one listed
is preferred (SGLang before vLLM, as the planner always did).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .base import Engine

#: module path of each built-in engine package; each exposes ENGINE. The preference order of the planner.
_BUILTIN: tuple[str, ...] = (
    "planners.engines.sglang",
    "planners.engines.vllm",
)

_engines: dict[str, Engine] = {}


def _load() -> dict[str, Engine]:
    # lazily: the engine packages import the planner's modules, which import bot.models, which validates engine
    # names through this registry
    if not _engines:
        for path in _BUILTIN:
            engine = importlib.import_module(path).ENGINE
            _engines.setdefault(engine.name, engine)
    return _engines


def register(engine: Engine) -> Engine:
    """Add an engine (after the built-in ones); registering the same name again replaces it."""
    _load()[engine.name] = engine
    return engine


def unregister(name: str) -> None:
    """Remove a registered engine (tests that registered one clean up with this)."""
    _load().pop(name, None)


def names() -> tuple[str, ...]:
    return tuple(_load())


def engines() -> tuple[Engine, ...]:
    return tuple(_load().values())


def get(name: str) -> Engine:
    """The engine called ``name``; KeyError names the known ones."""
    try:
        return _load()[name]
    except KeyError:
        raise KeyError(f"unknown engine {name!r} (known: {', '.join(names())})") from None


def find(name: str | None) -> Engine | None:
    return _load().get(name) if name else None


def is_engine(name: str) -> bool:
    return name in _load()


def from_word(word: str) -> Engine | None:
    """The engine a word of a request names ("vllm", "v-llm", "SGL"), or None; separators are ignored."""
    key = _squash(word)
    return next((e for e in _load().values() if key in {_squash(w) for w in e.words()}), None)


def serving(cmdline: str) -> Engine | None:
    """The engine a running server's command line belongs to, or None."""
    return next((e for e in _load().values() if e.serves(cmdline)), None)


def probe_spec() -> list[dict[str, object]]:
    """What the probe agents on a host need to know of each engine (they run with the host's Python alone, so the
    bot sends this): its package, the argv that prints its --help, the words of its servers' command lines, and
    its spellings of model / port / TP. Engines run as a binary are not looked up by the Python agents."""
    spec: list[dict[str, object]] = []
    for engine in _load().values():
        found = engine.discovery
        if not found.package or not found.module:
            continue
        flags = {n: [engine.flag_names[n], *engine.flag_alternatives.get(n, ())] for n in ("model", "port", "tp")
                 if engine.flag_names.get(n)}
        spec.append({"name": engine.name, "package": found.package, "help": ["-m", found.module, *found.help_args],
                     "marks": list(found.cmdline_marks), "flags": flags})
    return spec


def words() -> dict[str, str]:
    """Every word that names an engine (lower case, as spelled by the engine) -> its engine name."""
    return {w.lower(): e.name for e in _load().values() for w in e.words()}


def label(name: str) -> str:
    engine = find(name)
    return engine.label if engine else name


def validate_name(name: str) -> str:
    """For pydantic: an engine name must be registered."""
    if not isinstance(name, str) or not is_engine(name):
        raise ValueError(f"unknown engine {name!r}: one of {', '.join(names())}")
    return name


def _squash(word: str) -> str:
    return "".join(ch for ch in word.lower() if ch.isalnum())
