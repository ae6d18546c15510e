"""Pipeline behaviour on simulated hosts through the local transport (the SSH path is covered in test_pipeline_ssh).

No host named -> the host with the most margin; "same as before"; status naming who holds the GPUs; logs; approvals
(approver only, not one's own, one-shot, bound to the plan hash); the diagnoser's fix relaunched once after approval.
"""

from __future__ import annotations

import asyncio
import os
import subprocess

import pytest

from bot.config import Secrets, parse_config
from bot.events import (
    ApprovalDecided,
    ApprovalRequested,
    Diagnosed,
    Info,
    Launched,
    LogExcerpt,
    Parsed,
    Planned,
    Ready,
    RecordingThread,
)
from bot.mentions import mention
from bot.pipeline import Pipeline, Requester
from bot.simhost import build_sim_host
from bot.store import Store
from tests.ports import port_range


def make_pipeline(tmp_path, hosts: dict, **policy) -> Pipeline:
    config = parse_config({"hosts": hosts,
                           "policy": {"approvers": ["UAPPROVER", "UOTHER"], "min_margin_gib": 0.5,
                                      "port_range": port_range(), **policy},
                           "slack": {"excerpt_interval_s": 0.1, "excerpt_max_lines": 50}})
    return Pipeline(config, Store(tmp_path / "state.db"), secrets=Secrets())


@pytest.fixture
async def ct129(tmp_path):
    """A simulated 2x A6000 host named CT129 and a pipeline for it; servers and connections ended after the test."""
    sim = build_sim_host(tmp_path / "CT129", ready_after_s=0.3)
    pipeline = make_pipeline(tmp_path, {"CT129": {**sim.host_config(), "gpus": "2x NVIDIA RTX A6000"}})
    try:
        yield sim, pipeline
    finally:
        await pipeline.close()
        sim.terminate_processes()


async def test_no_host_named_picks_the_host_with_the_most_margin_and_says_why(tmp_path):
    small = build_sim_host(tmp_path / "CT130", gpus="4x4090", models=["Llama-3.1-8B-Instruct"], ready_after_s=0.3)
    big = build_sim_host(tmp_path / "gpu-box-3", gpus="1xA100-80", models=["Llama-3.1-8B-Instruct"], ready_after_s=0.3)
    pipeline = make_pipeline(tmp_path, {"CT130": small.host_config(), "gpu-box-3": big.host_config()})
    thread = RecordingThread()
    try:
        outcome = await pipeline.handle_text("start Llama-3.1-8B-Instruct", thread, Requester(user="U1"))
        assert outcome.state == "ready"
        plan = thread.of(Planned)[0].plan
        assert plan.host == "gpu-box-3"  # an idle 80 GB A100 leaves far more room than a 24 GB 4090
        why = [e.message for e in thread.of(Info) if e.step == "plan"]
        assert why and "gpu-box-3" in why[0]
        await pipeline.handle_text("stop Llama-3.1-8B-Instruct on gpu-box-3", RecordingThread(), Requester(user="U1"))
    finally:
        await pipeline.close()
        small.terminate_processes()
        big.terminate_processes()


async def test_same_as_before_reuses_the_last_successful_plan(ct129):
    sim, pipeline = ct129
    first = await pipeline.handle_text("start Qwen3-32B on CT129 with 16k context", RecordingThread(),
                                       Requester(user="U1"))
    assert first.state == "ready"
    await pipeline.handle_text("stop Qwen3-32B on CT129", RecordingThread(), Requester(user="U1"))
    thread = RecordingThread()
    again = await pipeline.handle_text("start Qwen3-32B on CT129 like last time", thread, Requester(user="U1"))
    assert again.state == "ready"
    note = thread.of(Parsed)[0].note
    assert note and first.deployment.id in note
    assert thread.of(Planned)[0].plan.context_length == 16384
    await pipeline.handle_text("stop Qwen3-32B on CT129", RecordingThread(), Requester(user="U1"))


async def test_status_and_logs_name_what_runs_and_who_started_it(ct129):
    sim, pipeline = ct129
    await pipeline.handle_text("start Llama-3.1-8B-Instruct on CT129 on GPU 1", RecordingThread(),
                               Requester(user="UALICE"))
    status = RecordingThread()
    await pipeline.handle_text("what's running on CT129?", status, Requester(user="UBOB"))
    text = status.of(Info)[-1].message
    assert "CT129 GPU 1: Llama-3.1-8B-Instruct" in text and f"started by {mention('UALICE')}" in text
    logs = RecordingThread()
    await pipeline.handle_text("show logs of llama 3.1 8b on ct129", logs, Requester(user="UBOB"))
    lines = logs.of(LogExcerpt)[0].lines
    assert any("ready to roll" in line for line in lines)
    await pipeline.handle_text("stop everything on CT129", RecordingThread(), Requester(user="UALICE"))


async def test_the_fix_is_relaunched_once_and_only_by_an_approver(ct129):
    sim, pipeline = ct129
    sim.set_scenario("crash:sglang-015")
    thread = RecordingThread()
    crashed = await pipeline.handle_text("start Qwen3.6-27B on CT129", thread, Requester(user="UREQ"))
    assert crashed.state == "crashed"
    assert thread.of(Diagnosed)[0].diagnosis.category == "kv_cache_insufficient"
    (asked,) = thread.of(ApprovalRequested)
    assert asked.action == "relaunch" and asked.previous_argv == crashed.deployment.plan.argv
    assert asked.plan is not None and asked.plan.argv != asked.previous_argv
    sim.set_scenario("healthy")
    refused = await pipeline.decide(asked.approval_id, "UNOBODY", True, RecordingThread())
    assert refused.state == "denied" and "not an approver" in refused.message
    own = await pipeline.decide(asked.approval_id, "UREQ", True, RecordingThread())
    assert own.state == "denied"
    clicks = [RecordingThread() for _ in range(10)]
    outcomes = await asyncio.gather(*(
        pipeline.decide(asked.approval_id, "UAPPROVER" if i % 2 else "UOTHER", True, clicks[i], until_ready=True)
        for i in range(10)))
    launched = [e for t in clicks for e in t.of(Launched)]
    assert len(launched) == 1  # ten clicks by two approvers at once: one relaunch
    assert sum(o.state == "ready" for o in outcomes) == 1
    decided = [e for t in clicks for e in t.of(ApprovalDecided)]
    assert len(decided) == 1 and decided[0].decision == "approved"
    relaunched = next(o for o in outcomes if o.state == "ready").deployment
    assert relaunched.plan.argv == asked.plan.argv  # exactly what the approval message showed
    await pipeline.handle_text("stop everything on CT129", RecordingThread(), Requester(user="UREQ"))


async def test_an_approval_whose_plan_went_stale_is_asked_again(ct129):
    sim, pipeline = ct129
    sim.set_scenario("crash:sglang-015")
    thread = RecordingThread()
    await pipeline.handle_text("start Qwen3.6-27B on CT129", thread, Requester(user="UREQ"))
    (asked,) = thread.of(ApprovalRequested)
    sim.set_scenario("healthy")
    # Someone else's job takes 3 GiB on GPU 0 meanwhile: the approved plan no longer matches the host.
    sim.set_gpu_processes([{"pid": 999999, "gpu": 0, "used_mib": 3072, "name": "python3"}])
    again = RecordingThread()
    outcome = await pipeline.decide(asked.approval_id, "UAPPROVER", True, again)
    assert outcome.state == "awaiting_approval"
    assert again.of(Launched) == []
    (new_ask,) = again.of(ApprovalRequested)
    assert new_ask.approval_id != asked.approval_id and new_ask.plan.argv != asked.plan.argv
    row = await pipeline.store.get_approval(asked.approval_id)
    assert row["state"] == "superseded"


async def test_ready_thread_reports_kv_capacity_and_measured_memory(ct129):
    sim, pipeline = ct129
    thread = RecordingThread()
    outcome = await pipeline.handle_text("start Qwen3.6-27B on CT129 with stock MTP", thread, Requester(user="U"))
    assert outcome.state == "ready"
    ready = thread.of(Ready)[0]
    assert ready.kv_tokens and ready.kv_tokens > 10_000
    assert ready.measured.startswith("planned ") and "measured" in ready.measured
    await pipeline.handle_text("stop everything on CT129", RecordingThread(), Requester(user="U"))


async def test_stop_of_a_server_deploybot_did_not_start_names_it_and_touches_nothing(ct129):
    sim, pipeline = ct129
    # Someone started a server by hand, outside deploybot.
    manual = subprocess.Popen(
        [str(sim.python), "-m", "sglang.launch_server", "--model-path", str(sim.models_dir / "Qwen3-32B"),
         "--port", "30777", "--tp-size", "2"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": "0,1"})
    try:
        for _ in range(100):  # until the fake engine has registered on the GPUs (what nvidia-smi will show)
            if str(manual.pid) in sim.state_file.read_text():
                break
            await asyncio.sleep(0.1)
        thread = RecordingThread()
        outcome = await pipeline.handle_text("stop Qwen3-32B on CT129", thread, Requester(user="U1"))
        assert outcome.state == "done"
        text = thread.of(Info)[-1].message
        assert "not started by deploybot" in text and f"PID {manual.pid}" in text and "port 30777" in text
        assert manual.poll() is None  # untouched
    finally:
        manual.terminate()
        manual.wait(timeout=10)
