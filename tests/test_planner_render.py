"""Plain-text renderings: what the console and Slack show for a plan and a refusal."""

from __future__ import annotations

import re
import shlex

from bot.models import DeployRequest, LaunchPlan, PlanFailure
from planners.plan import make_plan
from planners.render import command_line, failure_text, plan_text
from tests.test_planner_support import POLICY, fleet_facts, host_config


def make(host: str, model: str, **request) -> LaunchPlan | PlanFailure:
    return make_plan(
        DeployRequest(action="start", model=model, host=host, **request),
        fleet_facts(host, model),
        host_config(host),
        POLICY,
    )


def test_plan_text_shows_figures_risks_reasons_and_the_command() -> None:
    plan = make("CT129", "Qwen3.6-27B", speculative="mtp")
    assert isinstance(plan, LaunchPlan)
    text = plan_text(plan)
    assert text.startswith("Plan: Qwen3.6-27B on CT129 with SGLang 0.5.10, TP 2 on GPUs 0,1, port 30000")
    assert "GPU 0: 48.0 GiB total" in text and "GPU 1:" in text
    assert all(re.fullmatch(r"\d+\.\d", figure) for figure in re.findall(r"([\d.]+) GiB", text))
    assert "why:" in text and "TP 2:" in text
    assert command_line(plan) in text
    # the command is the argv, quoted: splitting it back gives env assignments then the argv itself
    words = shlex.split(command_line(plan))
    assert words[len(plan.env) :] == plan.argv


def test_failure_text_says_why_and_what_would_work() -> None:
    failure = make("CT129", "DeepSeek-V3")
    assert isinstance(failure, PlanFailure)
    text = failure_text(failure)
    assert text.splitlines()[0].startswith("Cannot plan: DeepSeek-V3 needs ~")
    assert "nearest that would work:" in text
    assert re.search(r"weights: \d+\.\d GiB", text)
