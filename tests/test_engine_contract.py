"""The contract every registered engine passes, and a scratch third engine (tests/engines/llamacpp, llama.cpp's
``llama-server``) that passes it too, registered here by one line: an engine is one package plus its registry entry.

For each engine: it is found from a real probe's facts (tests/data/probe_h200.json, an H200 host) by its install and
by the command line of a server it runs; it parses its captured --help texts (bot/simhost/enginehelp, the releases'
own parsers; the scratch engine's in tests/engines/llamacpp); the planner builds the seed plan's argv with it and its
own help parser accepts every flag; ``flag()`` spells every neutral flag id in a way its help knows (version-aware:
each captured release's own spelling); its log dialect reads its own weights / KV / ready lines from the fixtures in
tests/engines/<name>/healthy.log; and each of its crash rules matches a line of tests/engines/<name>/crash_lines.json,
which the diagnoser, told the engine, places in that rule's category.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.config import HostConfig, Policy
from bot.diagnose import diagnose
from bot.diagnose.rules import rules_for
from bot.logevents import KvCacheAllocated, LogReader, ServerReady, WeightsLoaded, detect_engine
from bot.models import DeployRequest, EngineInstall, HostFacts, LaunchPlan
from bot.inventory import Inventory, InventoryHost
from bot.parse.reader import parse_request
from bot.simhost.captures import CAPTURES, captured_versions
from planners import argv as argv_
from planners.engines import registry
from planners.engines.base import NEUTRAL_FLAGS, Engine
from planners.plan import make_plan
from tests.engines.llamacpp import ENGINE as LLAMACPP

#: Engines defined in the tests, registered for this module only (adding the scratch engine is this one line).
SCRATCH: tuple[Engine, ...] = (LLAMACPP,)

HERE = Path(__file__).parent
PROBE = {k: v for k, v in json.loads((HERE / "data" / "probe_h200.json").read_text()).items() if k != "probe_seconds"}


@pytest.fixture(scope="module", autouse=True)
def scratch_engines():
    for engine in SCRATCH:
        registry.register(engine)
    rules_for.cache_clear()  # the diagnoser caches each engine's rule set
    yield
    for engine in SCRATCH:
        registry.unregister(engine.name)
    rules_for.cache_clear()


ENGINES = ("sglang", "vllm", *(e.name for e in SCRATCH))


def _helps(engine: Engine) -> dict[str, str]:
    """version -> --help text: the captured releases, or the engine's own fixture."""
    versions = captured_versions(engine.name)
    if versions:
        helps = {}
        for version in versions:
            full = CAPTURES / f"{engine.name}-{version}.help-all.txt"
            helps[version] = (full if full.exists() else CAPTURES / f"{engine.name}-{version}.help.txt").read_text()
        return helps
    fixture = HERE / "engines" / engine.name / "help.txt"
    return {"fixture": fixture.read_text()}


def _facts(engine: Engine, version: str, help_text: str) -> HostFacts:
    facts = HostFacts.model_validate({**PROBE, "host": "H200"})
    install = EngineInstall(name=engine.name, version=None if version == "fixture" else version)
    return facts.model_copy(update={"engines": {engine.name: install}, "engine_help": {engine.name: help_text},
                                    "gpu_processes": [], "listening_ports": []})


@pytest.mark.parametrize("name", ENGINES)
def test_it_is_registered_under_its_name_and_words(name: str) -> None:
    engine = registry.get(name)
    assert isinstance(engine, Engine)
    for word in engine.words():
        assert registry.from_word(word) is engine
        assert registry.from_word(word.upper()) is engine
    inventory = Inventory(hosts={"CT129": InventoryHost(name="CT129", models=["Qwen3-8B"], gpu_count=2)})
    for word in engine.words():
        request = parse_request(f"start Qwen3-8B on CT129 using {word}", inventory)
        assert isinstance(request, DeployRequest) and request.engine == name, (word, request)
    assert DeployRequest(action="start", engine=name).engine == name


@pytest.mark.parametrize("name", ENGINES)
def test_it_finds_itself_in_a_probes_facts(name: str) -> None:
    engine = registry.get(name)
    facts = _facts(engine, "fixture", "")
    assert engine.installed(facts) == facts.engines[name]
    assert engine.installed(HostFacts.model_validate({**PROBE, "host": "H200", "engines": {}})) is None
    launched = [*engine.launcher("/usr/bin/python3"), engine.flag("model"), "/models/Qwen3-8B"]
    assert registry.serving(" ".join(launched)) is engine
    assert engine.discovery.help_command("/usr/bin/python3")[-len(engine.discovery.help_args):] == list(
        engine.discovery.help_args)
    # the real probe saw an SGLang server running; only SGLang claims that command line
    cmdline = PROBE["gpu_processes"][0]["cmdline"]
    assert (registry.serving(cmdline) is engine) == (name == "sglang")


@pytest.mark.parametrize("name", ENGINES)
def test_it_parses_its_own_help_texts(name: str) -> None:
    engine = registry.get(name)
    for version, text in _helps(engine).items():
        help_ = engine.parse_help(text)
        assert engine.help_complete(help_), (version, [f for f in engine.core_flags if not help_.knows(f)])
        assert len(help_.flags) > len(engine.core_flags)
        assert not engine.help_complete(engine.parse_help(text[:200])), "a cut help text must not look complete"


@pytest.mark.parametrize("name", ENGINES)
def test_flag_spells_every_neutral_flag_as_its_help_lists_it(name: str) -> None:
    engine = registry.get(name)
    for version, text in _helps(engine).items():
        help_ = engine.parse_help(text)
        for neutral in NEUTRAL_FLAGS:
            if not engine.has_flag(neutral):
                with pytest.raises(KeyError):
                    engine.flag(neutral)
                continue
            by_help = engine.flag(neutral, help_=help_)
            assert help_.knows(by_help), (version, neutral, by_help)
            if version != "fixture":  # without the help text, the release's version must give the same spelling
                assert help_.knows(engine.flag(neutral, version=version)), (version, neutral)
            assert engine.flag(neutral).startswith("-")
    spelled = [n for n in NEUTRAL_FLAGS if engine.has_flag(n)]
    assert {"model", "port", "context"} <= set(spelled)


@pytest.mark.parametrize("name", ENGINES)
def test_the_seed_plan_builds_an_argv_its_own_help_accepts(name: str) -> None:
    engine = registry.get(name)
    version, text = list(_helps(engine).items())[-1]
    facts = _facts(engine, version, text)
    request = DeployRequest(action="start", model="Qwen3-8B", host="H200", engine=name)
    host = HostConfig(models_dir="/models", python="/usr/bin/python3", transport="local")
    plan = make_plan(request, facts, host, Policy())
    assert isinstance(plan, LaunchPlan), plan
    assert plan.engine == name
    launcher, args = argv_.split(plan.argv, engine)
    assert launcher == engine.launcher("/usr/bin/python3")
    help_ = engine.parse_help(text)
    assert [f for _, f, _ in argv_.flags_in(args) if not help_.knows(f)] == []
    assert argv_.value_of(args, [engine.flag("port", help_=help_)]) == str(plan.port)
    assert argv_.value_of(args, [engine.flag("context", help_=help_)]) == str(plan.context_length)
    assert any(f"checked against {engine.label}" in r for r in plan.reasons)


@pytest.mark.parametrize("name", ENGINES)
def test_its_log_dialect_reads_its_own_start_up(name: str) -> None:
    engine = registry.get(name)
    log = (HERE / "engines" / name / "healthy.log").read_text()
    for reader in (LogReader(name), LogReader()):
        events = [event for line in log.splitlines() for event in reader.feed(line)]
        kinds = {type(event) for event in events}
        assert {WeightsLoaded, KvCacheAllocated, ServerReady} <= kinds, (reader.engine, kinds)
        assert reader.engine == name
        kv = next(e for e in events if isinstance(e, KvCacheAllocated))
        assert kv.tokens > 0
    assert detect_engine(log) == name
    lines = log.splitlines()
    assert any(engine.dialect.says("ready", line) for line in lines)
    assert any(engine.dialect.says("weights_loaded", line) for line in lines)
    assert any(engine.dialect.says("kv_allocated", line) for line in lines)
    others = [e for e in registry.engines() if e is not engine]
    assert not any(o.dialect.wrote(line, line) for o in others for line in lines if engine.dialect.wrote(line, line))


@pytest.mark.parametrize("name", ENGINES)
def test_each_crash_rule_matches_its_fixture_line(name: str) -> None:
    engine = registry.get(name)
    lines = json.loads((HERE / "engines" / name / "crash_lines.json").read_text())
    assert {rule.name for rule in engine.crash_rules} <= set(lines), "every rule needs a fixture line"
    for rule in engine.crash_rules:
        fixture = lines[rule.name]
        line = fixture["line"]
        assert rule.pattern.search(line), (rule.name, line)
        assert not (rule.exclude and rule.exclude.search(line)), rule.name
        if rule.context is not None:  # the words it needs above it (or on the line itself)
            assert rule.context.search(fixture.get("context", line)), rule.name
        assert fixture["source"], "say where the line came from"
        # and the diagnoser, told the engine, gives the rule's verdict for that tail
        tail = "".join(f"{text}\n" for text in (fixture.get("context"), line) if text)
        verdict = diagnose(tail, engine=name, exit_code=1)
        assert verdict.category == rule.category, (rule.name, verdict.category, verdict.cause)
