"""Every neutral setting an engine names (its ``flag_names``: the spellings the planner and the diagnoser's advice
write) resolves, against each captured --help of that engine (bot/simhost/enginehelp, the engines' own --help at a
release), to a flag that help lists, directly or through the captured renames (--no-enable-prefix-caching became
--disable-prefix-caching by vLLM 0.33.0). A step that names a flag the installed release does not take would send
the person at 2 a.m. to a second error."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from planners.engines import registry

_HELPS = Path(__file__).resolve().parents[1] / "bot" / "simhost" / "enginehelp"
#: Settings a release may lack altogether (the captured help shows no spelling of them): checked where present only.
_OPTIONAL = {"graph_bs", "mamba_strategy"}
_CASES = [(engine.name, path) for engine in registry.engines()
          for path in sorted(_HELPS.glob(f"{engine.name}-*.help.txt"))]


@pytest.mark.parametrize(("engine_name", "help_path"), _CASES, ids=[path.stem for _, path in _CASES])
def test_every_neutral_setting_resolves_to_a_flag_the_captured_help_lists(engine_name: str, help_path: Path) -> None:
    engine = registry.get(engine_name)
    text = help_path.read_text()
    parsed = engine.parse_help(text)
    missing = []
    for name in engine.flag_names:
        flag = engine.flag(name, help_=parsed)
        if not re.search(re.escape(flag) + r"(?![\w-])", text) and name not in _OPTIONAL:
            missing.append(f"{name} -> {flag}")
    assert not missing, missing


def test_the_captured_helps_cover_both_engines() -> None:
    assert {name for name, _ in _CASES} >= {"sglang", "vllm"}
