"""Speculative decoding with a separate drafter, end to end over a REAL OpenSSH sshd against the simulated host
(issue 16): DFlash on SGLang, an EAGLE-3 head, a standalone draft model, on both engines; the refusals (another
vocabulary, an engine release without the method) name what is wrong and run nothing on the host."""

from __future__ import annotations

import json

import pytest

from bot.config import Secrets, parse_config
from bot.events import Info, Launched, Planned, Ready, RecordingThread
from bot.models import GIB
from bot.pipeline import Pipeline, Requester
from bot.simhost import build_sim_host
from bot.store import Store
from tests.ports import port_range
from tests.procs import pid_alive

DFLASH = "Qwen3.6-27B-DFlash"
OTHER_VOCAB = "Qwen3-8B-DFlash-b16"
EAGLE3 = "sglang-EAGLE3-LLaMA3.1-Instruct-8B"
DRAFT = "Qwen3-0.6B"


def _story(thread: RecordingThread) -> list[str]:
    """What happened, for a failing assertion: each event's kind and its text (the crash's log lines too)."""
    return [f"{e.kind}: {e.model_dump_json(exclude={'plan', 'facts'})[:600]}" for e in thread.events]


def _arg(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


@pytest.fixture
def drafthost(tmp_path, request):
    engines = getattr(request, "param", {"sglang": "0.5.11", "vllm": "0.20.0"})
    host = build_sim_host(
        tmp_path / "simhost",
        models=("Qwen3.6-27B", "Qwen3-32B", "Llama-3.1-8B-Instruct", DFLASH, OTHER_VOCAB, EAGLE3, DRAFT),
        engines=engines,
        ready_after_s=0.5,
    )
    host.set_scenario("healthy", periodic_interval_s=0.5)
    try:
        yield host
    finally:
        host.terminate_processes()


def _config(sshd, host, **entry) -> object:
    base = {**host.host_config(), **sshd.host_overrides(), "transport": "ssh", **entry}
    # a port range of this run's own (tests/ports.py): other suites' simulated engines start at the same time
    policy = {"approvers": ["UAPPROVER"], "min_margin_gib": 0.5, "port_range": port_range()}
    return parse_config({"hosts": {"CT129": base}, "policy": policy})


async def _start(sshd, host, tmp_path, text: str, **entry):
    pipeline = Pipeline(_config(sshd, host, **entry), Store(tmp_path / "state.db"), secrets=Secrets())
    thread = RecordingThread()
    outcome = await pipeline.handle_text(text, thread, Requester(user="U1"))
    return pipeline, thread, outcome


async def _stop(pipeline: Pipeline, model: str, pid: int) -> None:
    stop = await pipeline.handle_text(f"stop {model} on CT129", RecordingThread(), Requester(user="U1"))
    assert stop.state == "stopped"
    assert not pid_alive(pid)


async def test_the_seed_request_launches_sglang_dflash_and_reaches_ready(sshd, drafthost, tmp_path):
    text = "start Qwen3.6-27B on CT129 with the dflash drafter"
    pipeline, thread, outcome = await _start(sshd, drafthost, tmp_path, text, drafters={"Qwen3.6-27B": [DFLASH]})
    try:
        assert outcome.state == "ready", _story(thread)
        plan = thread.of(Planned)[0].plan
        assert plan.engine == "sglang" and plan.speculative == "dflash" and plan.draft_model == DFLASH
        assert _arg(plan.argv, "--speculative-algorithm") == "DFLASH"
        assert _arg(plan.argv, "--speculative-draft-model-path") == str(drafthost.models_dir / DFLASH)
        assert _arg(plan.argv, "--speculative-dflash-block-size") == "16"  # the drafter's trained block
        assert "--speculative-num-steps" not in plan.argv  # DFLASH forces steps and topk to 1 itself
        # Qwen3.6-27B is hybrid: any drafter needs the rollback strategy (SGLang raises otherwise)
        assert _arg(plan.argv, "--mamba-scheduler-strategy") == "extra_buffer"
        assert 1 * GIB < plan.draft_weights_bytes < 6 * GIB
        per_gpu_draft = plan.draft_weights_bytes // plan.tp
        assert all(g.weights_bytes >= plan.weights_bytes // plan.tp + per_gpu_draft for g in plan.per_gpu)
        assert any("Drafter: DFlash drafter Qwen3.6-27B-DFlash" in r for r in plan.reasons)
        assert any(r.startswith("All ") and "flags checked against SGLang 0.5.11's own --help" in r
                   for r in plan.reasons), plan.reasons
        assert thread.of(Ready)
        # after ready the thread says how well the drafter does, measured by the engine, next to its config's block
        said = [e.message for e in thread.of(Info) if e.message.startswith("DFlash drafter")]
        assert len(said) == 1 and "accept length" in said[0] and "at most 16 per step" in said[0], said
        length = float(said[0].split("accept length ")[1].split(",")[0].split(" ")[0])
        assert 1.0 < length <= 16.0
        await _stop(pipeline, "Qwen3.6-27B", thread.of(Launched)[0].handle.pid)
    finally:
        await pipeline.close()


async def test_an_eagle3_head_is_planned_and_launched(sshd, drafthost, tmp_path):
    text = f"start Llama-3.1-8B-Instruct on CT129 with eagle3 drafter {EAGLE3}"
    pipeline, thread, outcome = await _start(sshd, drafthost, tmp_path, text)
    try:
        assert outcome.state == "ready", _story(thread)
        plan = thread.of(Planned)[0].plan
        assert plan.speculative == "eagle3" and plan.draft_model == EAGLE3
        assert _arg(plan.argv, "--speculative-algorithm") == "EAGLE3"
        assert _arg(plan.argv, "--speculative-draft-model-path").endswith("/" + EAGLE3)
        for flag, value in (("--speculative-num-steps", "3"), ("--speculative-eagle-topk", "1"),
                            ("--speculative-num-draft-tokens", "4")):
            assert _arg(plan.argv, flag) == value
        await _stop(pipeline, "Llama-3.1-8B-Instruct", thread.of(Launched)[0].handle.pid)
    finally:
        await pipeline.close()


async def test_a_standalone_draft_model_on_vllm_is_planned_and_launched(sshd, drafthost, tmp_path):
    text = f"start Qwen3-32B on CT129 using vllm with draft model {DRAFT}"
    pipeline, thread, outcome = await _start(sshd, drafthost, tmp_path, text)
    try:
        assert outcome.state == "ready", _story(thread)
        plan = thread.of(Planned)[0].plan
        assert plan.engine == "vllm" and plan.speculative == "draft" and plan.draft_model == DRAFT
        config = json.loads(_arg(plan.argv, "--speculative-config"))
        assert config == {"method": "draft_model", "model": str(drafthost.models_dir / DRAFT),
                          "num_speculative_tokens": 3}
        await _stop(pipeline, "Qwen3-32B", thread.of(Launched)[0].handle.pid)
    finally:
        await pipeline.close()


async def test_a_drafter_for_another_vocabulary_is_refused_naming_it(sshd, drafthost, tmp_path):
    text = f"start Qwen3.6-27B on CT129 with the dflash drafter {OTHER_VOCAB}"
    pipeline, thread, outcome = await _start(sshd, drafthost, tmp_path, text)
    try:
        assert outcome.state == "rejected" and not thread.of(Launched), outcome.message
        assert "another vocabulary" in outcome.message and "151,936" in outcome.message
        assert "248,320" in outcome.message  # the target's, so the person sees both
        assert not list(drafthost.log_dir.glob("*.log"))
    finally:
        await pipeline.close()


@pytest.mark.parametrize("drafthost", [{"vllm": "0.11.0"}], indirect=True)
async def test_vllm_0_11_with_dflash_is_refused_naming_the_version(sshd, drafthost, tmp_path):
    text = "start Qwen3.6-27B on CT129 using vllm with the dflash drafter"
    pipeline, thread, outcome = await _start(sshd, drafthost, tmp_path, text)
    try:
        assert outcome.state == "rejected" and not thread.of(Launched), outcome.message
        assert "vLLM 0.11.0" in outcome.message and "0.20.0" in outcome.message and "dflash" in outcome.message
    finally:
        await pipeline.close()
