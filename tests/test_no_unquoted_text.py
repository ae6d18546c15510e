"""No text a user types reaches a remote shell unquoted, end to end: text -> parse -> plan -> the command string.

Whatever a user writes, either the parser refuses it, or every value that ends up in the launch command arrives at
the program as exactly one literal argument when the command is run by a real `sh`.
"""

from __future__ import annotations

import asyncio
import subprocess
from functools import cache

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from bot.config import HostConfig, Policy
from bot.models import DeployRequest, HostFacts, LaunchPlan
from bot.probe import fetch_engine_help, probe
from bot.remote import LocalRemote, remote_command
from bot.request import Inventory, InventoryHost, parse_request
from bot.simhost import build_sim_host
from planners.plan import make_plan

SHELL = ["; rm -rf /", "&& id", "| sh", "$(id)", "`id`", "${IFS}", "> /etc/x", "< /etc/passwd", "'", '"', "\\",
         "\n", "../..", "~root", "$HOME", "*", "#", "!!", "%s", "\t"]
WORDS = ["start", "launch", "fire up", "Qwen3.6-27B", "qwen 3.6 27b", "Qwen3-32B", "llama 3.1 8b", "on", "CT129",
         "ct-129", "with", "MTP", "tp 2", "port 30500", "32k context", "GPU 1", "using vllm", "sglang", "fp8",
         "please", "`Qwen3.6-27B`", "*CT129*", "“CT129”"]


@cache
def host_and_facts(root: str) -> tuple[HostConfig, dict[str, HostFacts]]:
    from pathlib import Path

    sim = build_sim_host(Path(root) / "CT129", models=["Qwen3.6-27B", "Qwen3-32B", "Llama-3.1-8B-Instruct"])
    host = HostConfig.model_validate(sim.host_config())

    async def gather() -> dict[str, HostFacts]:
        remote = LocalRemote("CT129")
        helps = await fetch_engine_help(remote, host, ["sglang", "vllm"])
        facts = {}
        for model in ("Qwen3.6-27B", "Qwen3-32B", "Llama-3.1-8B-Instruct"):
            probed = await probe(remote, "CT129", host, model=model)
            facts[model] = probed.model_copy(update={"engine_help": helps})
        return facts

    return host, asyncio.run(gather())


def arrives_intact(argv: list[str]) -> bool:
    out = subprocess.run(["sh", "-c", remote_command(["printf", "%s\\0", *argv])], capture_output=True,
                         check=True).stdout
    return out.split(b"\0")[:-1] == [a.encode() for a in argv]


BASES = ["start Qwen3.6-27B on CT129", "fire up qwen 3.6 27b on ct-129", "launch Qwen3-32B on CT129",
         "spin up llama 3.1 8b on CT129", "serve `Qwen3.6-27B` on *CT129*"]
OPTIONS = ["with MTP", "no MTP", "tp 2", "port 30500", "32k context", "max context 8192", "GPU 1", "on both GPUs",
           "using vllm", "with sglang", "fp8", "please", "thanks!"]


@st.composite
def request_texts(draw: st.DrawFn) -> str:
    words = draw(st.sampled_from(BASES)).split()
    for _ in range(draw(st.integers(0, 4))):
        piece = draw(st.one_of(st.sampled_from(OPTIONS), st.sampled_from(OPTIONS), st.sampled_from(SHELL),
                               st.text(max_size=8)))
        words.insert(draw(st.integers(0, len(words))), piece)
    return " ".join(words)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(request_texts(), st.lists(st.one_of(st.sampled_from(WORDS), st.sampled_from(SHELL),
                                                     st.text(max_size=8)), min_size=1, max_size=9).map(" ".join)))
def test_user_text_either_is_refused_or_arrives_as_literal_arguments(tmp_path_factory, text):
    host, facts = host_and_facts(str(tmp_path_factory.getbasetemp() / "no-unquoted"))
    inventory = Inventory(hosts={"CT129": InventoryHost(name="CT129", models=list(facts), gpu_count=2)})
    request = parse_request(text, inventory)
    if not isinstance(request, DeployRequest) or request.action != "start" or request.model is None:
        event("refused or not a start")
        return
    request = request.model_copy(update={"host": "CT129"})
    plan = make_plan(request, facts[request.model], host, Policy())
    if not isinstance(plan, LaunchPlan):
        event("parsed, plan refused")
        return
    event("planned: command checked")
    assert arrives_intact(plan.argv[1:])
    for value in plan.env.values():
        assert arrives_intact([value])
