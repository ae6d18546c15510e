"""The seed's real first error (SGLang's radix cache refusing MTP on a hybrid model, crash log sglang-010 from
sgl-project/sglang#25116) is diagnosed with a fix that keeps MTP, spelled as the host's build spells it, and the
approved fix relaunches with MTP on a simulated host."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.diagnose import diagnose
from bot.events import ApprovalRequested, Diagnosed, Planned, RecordingThread
from bot.models import PlanOverrides
from bot.pipeline import Requester
from bot.simhost import build_sim_host
from bot.simhost.captures import help_text
from planners.argv import remove
from tests.test_diagnose import _facts, _plan
from tests.test_pipeline_local import make_pipeline

LOG = json.loads((Path(__file__).parent / "data" / "crashlogs" / "dev" / "sglang-010.json").read_text())["log"]


def _with(version: str | None, help_version: str | None):
    plan = _plan(speculative="mtp").model_copy(update={"engine_version": version})
    facts = _facts()
    if help_version:
        facts = facts.model_copy(update={"engine_help": {"sglang": help_text("sglang", help_version)}})
    return plan, facts


@pytest.mark.parametrize(
    ("version", "help_version", "flag"),
    [
        ("0.5.11", "0.5.11", "--mamba-scheduler-strategy"),
        ("0.5.23", "0.5.23", "--mamba-radix-cache-strategy"),
        ("0.5.23", None, "--mamba-radix-cache-strategy"),  # no help text: the captured renames at that version
        (None, None, "--mamba-scheduler-strategy"),  # nothing known: as the engine's message spells it
    ],
)
def test_the_radix_cache_refusal_is_fixed_keeping_mtp(version, help_version, flag) -> None:
    plan, facts = _with(version, help_version)
    result = diagnose(LOG, plan=plan, facts=facts)
    assert result.category == "speculative_config_invalid"
    assert result.fix is not None
    overrides = result.fix.overrides
    assert overrides.speculative == "mtp"
    assert overrides.extra_args == [flag, "extra_buffer"]
    assert overrides.env == {"SGLANG_ENABLE_SPEC_V2": "1"}
    assert "keep MTP" in result.fix.summary and "MTP stays on" in result.next_steps[0]


def test_other_speculative_errors_still_turn_mtp_off() -> None:
    log = "AssertionError: Only EAGLE and DSPARK speculative algorithms are supported for DeepseekV4ForCausalLM\n"
    result = diagnose(log, plan=_plan(speculative="mtp"), facts=_facts())
    assert result.fix is not None and result.fix.overrides.speculative == "none"


async def test_the_seed_crash_relaunch_keeps_mtp_on_the_simulated_host(tmp_path) -> None:
    sim = build_sim_host(tmp_path / "CT129", engines={"sglang": "0.5.11"}, ready_after_s=0.3)
    pipeline = make_pipeline(tmp_path, {"CT129": {**sim.host_config(), "gpus": "2x NVIDIA RTX A6000"}})
    sim.set_scenario("crash:sglang-010")
    thread = RecordingThread()
    try:
        # The seed's real first launch: MTP on the hybrid model without the extra_buffer strategy (the planner now
        # adds it itself, so the crashed launch is the planned one with it taken out, as the seed ran it).
        request = await pipeline.parse("start Qwen3.6-27B on CT129 with stock MTP")
        planned, _facts = await pipeline.plan(request, thread, PlanOverrides())
        seed_argv, _ = remove(planned.argv, ["--mamba-scheduler-strategy"])
        seed_env = {k: v for k, v in planned.env.items() if k != "SGLANG_ENABLE_SPEC_V2"}
        seed = planned.model_copy(update={"argv": seed_argv, "env": seed_env})
        crashed = await pipeline.launch_and_follow(seed, thread, Requester(user="UREQ"))
        assert crashed.state == "crashed"
        assert thread.of(Diagnosed)[0].diagnosis.category == "speculative_config_invalid"
        (asked,) = thread.of(ApprovalRequested)
        assert asked.plan is not None and asked.plan.speculative == "mtp"
        line = asked.plan.argv
        assert line[line.index("--mamba-scheduler-strategy") + 1] == "extra_buffer"
        assert "--speculative-algorithm" in line and asked.plan.env["SGLANG_ENABLE_SPEC_V2"] == "1"
        sim.set_scenario("healthy")
        done = await pipeline.decide(asked.approval_id, "UAPPROVER", True, RecordingThread(), until_ready=True)
        assert done.state == "ready" and done.deployment.plan.speculative == "mtp"
        assert thread.of(Planned)[0].plan.speculative == "mtp"
    finally:
        await pipeline.close()
        sim.terminate_processes()


def test_a_launch_that_already_kept_mtp_that_way_is_not_told_to_do_it_again() -> None:
    """The refusal on a plan that already has the strategy and SGLANG_ENABLE_SPEC_V2: the same fix again would
    relaunch the same command line, so the last resort (MTP off) is the fix, and it says so."""
    plan, facts = _with("0.5.11", "0.5.11")
    plan = plan.model_copy(update={"argv": [*plan.argv, "--mamba-scheduler-strategy", "extra_buffer"],
                                   "env": {**plan.env, "SGLANG_ENABLE_SPEC_V2": "1"}})
    result = diagnose(LOG, plan=plan, facts=facts)
    assert result.category == "speculative_config_invalid"
    assert result.fix is not None and result.fix.overrides.speculative == "none"
