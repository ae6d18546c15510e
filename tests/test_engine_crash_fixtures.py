"""Each engine's crash fixtures (tests/engines/<name>/crashes/*.json, drawn from the dev corpus with their source
URLs): one real log per category the engine printed, with its expected verdict and decisive line. They are diagnosed
as that engine's deployments, so the engine's own crash rules (planners/engines/<name>/crash_rules.py) and only
those are in play."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.diagnose import diagnose
from planners.engines import registry

ENGINES = Path(__file__).resolve().parent / "engines"
FIXTURES = sorted(ENGINES.glob("*/crashes/*.json"))


def test_every_registered_engine_has_crash_fixtures_and_every_fixture_an_engine() -> None:
    folders = {path.parts[-3] for path in FIXTURES}
    assert folders == set(registry.names())


@pytest.mark.parametrize("path", FIXTURES, ids=lambda path: f"{path.parts[-3]}/{path.stem}")
def test_an_engines_crash_fixture_gets_its_verdict_and_decisive_line(path: Path) -> None:
    fixture = json.loads(path.read_text())
    assert fixture["source"], "every fixture says where it came from"
    result = diagnose(fixture["log"], engine=path.parts[-3])
    assert result.category == fixture["category"] == path.stem, result.cause
    if fixture["category"] != "none":
        assert result.evidence and fixture["decisive"] in result.evidence[0].text
        assert result.next_steps
