"""Issue 17: from a crash to a healthy server without anyone typing flags, within the limits app.yaml's policy sets.

Over a REAL OpenSSH sshd on loopback against the simulated GPU host. The simulated engine's crash depends on its
command line as a real one does (`heals_when_changed`): it repeats while a launch sets the named flags as the first
crashed launch did, so a relaunch only reaches ready when the fix really changed what the crash depends on.
"""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from bot.config import Secrets, parse_config
from bot.events import Crashed, Diagnosed, Info, Launched, Ready, RecordingThread
from bot.pipeline import Pipeline, Requester
from bot.store import Store
from tests.test_pipeline_ssh import ssh_config

SEED = "start Qwen3.6-27B on CT129"
AUTO = {"auto_fix": ["kv_cache_insufficient", "cuda_graph_oom"]}


def _story(thread: RecordingThread) -> list[str]:
    """What the thread saw, for a failure's message."""
    return [f"{e.kind}: {getattr(e, 'message', '')}{e.diagnosis.category + ' ' + e.diagnosis.cause if e.kind == 'diagnosed' else ''}"
            for e in thread.events if e.kind != "log_excerpt"]


def _auto_infos(thread: RecordingThread) -> list[str]:
    return [e.message for e in thread.of(Info) if "relaunched automatically by policy auto_fix" in e.message]


async def _run(sshd, simhost, tmp_path, text: str = SEED, **policy):
    config = parse_config(ssh_config(sshd, simhost, **policy))
    store = Store(tmp_path / "state.db")
    pipeline = Pipeline(config, store, secrets=Secrets())
    thread = RecordingThread()
    try:
        outcome = await pipeline.handle_text(text, thread, Requester(user="U1"))
        audit = store.audit_rows_sync()
        pending = await store.pending_approvals()
        return outcome, thread, pending, audit
    finally:
        await pipeline.close()
        store.close()


async def test_kv_cache_crash_reaches_ready_after_exactly_one_automatic_relaunch(sshd, simhost, tmp_path):
    simhost.set_scenario("crash:sglang-015", heals_when_changed=["--mem-fraction-static", "--context-length"])
    outcome, thread, pending, audit = await _run(sshd, simhost, tmp_path, **AUTO)
    assert outcome.state == "ready", " | ".join(_story(thread))
    assert len(thread.of(Launched)) == 2 and len(thread.of(Crashed)) == 1
    assert thread.of(Diagnosed)[0].diagnosis.category == "kv_cache_insufficient"
    (told,) = _auto_infos(thread)
    # the thread says what changed, flag by flag, as the fix changed it
    assert "kv_cache_insufficient" in told and "--mem-fraction-static" in told and "->" in told
    first, second = (e.handle.pid for e in thread.of(Launched))
    assert first != second
    assert not pending  # nobody was asked
    (row,) = [r for r in audit if r["action"] == "auto_relaunch"]
    assert row["result"] == "kv_cache_insufficient" and "--mem-fraction-static" in row["detail"]


async def test_cuda_graph_crash_reaches_ready_after_exactly_one_automatic_relaunch(sshd, simhost, tmp_path):
    simhost.set_scenario("crash:sglang-001", heals_when_changed=["--cuda-graph-max-bs", "--disable-cuda-graph"])
    outcome, thread, pending, _ = await _run(sshd, simhost, tmp_path, **AUTO)
    assert outcome.state == "ready", " | ".join(_story(thread))
    assert thread.of(Diagnosed)[0].diagnosis.category == "cuda_graph_oom"
    assert len(thread.of(Launched)) == 2
    (told,) = _auto_infos(thread)
    assert "cuda_graph_oom" in told and ("--cuda-graph-max-bs" in told or "--disable-cuda-graph" in told)
    assert not pending


async def test_default_policy_launches_once_and_waits_for_an_approval(sshd, simhost, tmp_path):
    simhost.set_scenario("crash:sglang-015", heals_when_changed=["--mem-fraction-static", "--context-length"])
    outcome, thread, pending, _ = await _run(sshd, simhost, tmp_path)
    assert outcome.state == "crashed"
    assert len(thread.of(Launched)) == 1 and not _auto_infos(thread)
    assert len(pending) == 1 and pending[0]["action"] == "relaunch"


async def test_a_category_outside_auto_fix_waits_for_an_approval(sshd, simhost, tmp_path):
    simhost.set_scenario("crash:sglang-015", heals_when_changed=["--mem-fraction-static", "--context-length"])
    outcome, thread, pending, _ = await _run(sshd, simhost, tmp_path, auto_fix=["cuda_graph_oom"])
    assert outcome.state == "crashed" and len(thread.of(Launched)) == 1
    assert len(pending) == 1 and pending[0]["action"] == "relaunch"


async def test_a_fix_that_keeps_failing_stops_after_max_auto_relaunches(sshd, simhost, tmp_path):
    simhost.set_scenario("crash:sglang-015")  # crashes whatever the command line says
    outcome, thread, pending, _ = await _run(sshd, simhost, tmp_path, max_auto_relaunches=2, **AUTO)
    assert outcome.state == "crashed"
    assert len(thread.of(Launched)) == 3, [e.message for e in thread.of(Info)]
    assert len(thread.of(Crashed)) == 3  # the first launch + 2 automatic
    assert len(_auto_infos(thread)) == 2
    assert any("max_auto_relaunches 2" in e.message for e in thread.of(Info))
    # the last fix is put behind an approval, as without the policy
    assert len(pending) == 1 and pending[0]["action"] == "relaunch"
    tried = outcome.deployment.chain.tried_plans
    assert len(tried) == 3 and len(set(tried)) == 3  # never the same plan twice
    assert outcome.deployment.chain.auto_relaunches == 2


async def test_host_policy_overrides_the_global_one(sshd, simhost, tmp_path):
    config = parse_config(ssh_config(sshd, simhost, **AUTO))
    host = config.hosts["CT129"]
    assert config.policy.healing_for(host).auto_fix == ["kv_cache_insufficient", "cuda_graph_oom"]
    raw = ssh_config(sshd, simhost, **AUTO)
    raw["hosts"]["CT129"]["policy"] = {"auto_fix": [], "restart_on_crash": True}
    config = parse_config(raw)
    healing = config.policy.healing_for(config.hosts["CT129"])
    assert healing.auto_fix == [] and healing.restart_on_crash and healing.max_auto_relaunches == 2


async def _serve_until_killed(sshd, simhost, tmp_path, **policy):
    """Launch as serve does (following after ready), SIGKILL the server once ready, return what the thread saw."""
    config = parse_config(ssh_config(sshd, simhost, restart_backoff_s=0, **policy))
    store = Store(tmp_path / "state.db")
    pipeline = Pipeline(config, store, secrets=Secrets())
    thread = RecordingThread()
    task = asyncio.create_task(pipeline.handle_text(SEED, thread, Requester(user="U1"), until_ready=False))
    try:
        await _until(lambda: thread.of(Ready), task, thread)
        os.kill(thread.of(Launched)[0].handle.pid, signal.SIGKILL)
        await _until(lambda: thread.of(Crashed), task, thread)
        if policy.get("restart_on_crash"):
            await _until(lambda: len(thread.of(Ready)) == 2, task, thread)
        else:
            await asyncio.wait_for(task, 60)
        return thread
    finally:
        for dep in await store.active_deployments("CT129"):
            await pipeline.stop_deployment(dep)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await pipeline.close()
        store.close()


async def _until(predicate, task: asyncio.Task, thread: RecordingThread, timeout: float = 90) -> None:
    for _ in range(int(timeout / 0.1)):
        if predicate():
            return
        if task.done():
            raise AssertionError(f"the pipeline ended first ({task.result().state}): {' | '.join(_story(thread))}")
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out: {' | '.join(_story(thread))}")


async def test_a_server_killed_after_ready_is_told_with_its_time_in_service(sshd, simhost, tmp_path):
    thread = await _serve_until_killed(sshd, simhost, tmp_path)
    (crashed,) = thread.of(Crashed)
    assert crashed.served_s is not None and crashed.exit_code == 137
    assert crashed.stopped_text().startswith("crashed after ") and "of service (exit 137)" in crashed.stopped_text()
    assert thread.of(Diagnosed)  # the thread gets the diagnosis
    assert len(thread.of(Launched)) == 1  # restart_on_crash is off by default


async def test_restart_on_crash_starts_a_server_killed_after_ready_again(sshd, simhost, tmp_path):
    thread = await _serve_until_killed(sshd, simhost, tmp_path, restart_on_crash=True)
    assert len(thread.of(Launched)) == 2 and len(thread.of(Ready)) == 2
    assert any("policy restart_on_crash: restarting with the same plan" in e.message for e in thread.of(Info))
    first, second = (e.handle.pid for e in thread.of(Launched))
    assert first != second


#: Each recoverable category, as the simulated fleet makes it happen: (request, scenario, flags the crash depends on,
#: the most automatic relaunches it may take to reach ready). The closing note of issue 17 quotes the counts.
RECOVERABLE = {
    "kv_cache_insufficient": (SEED, "crash:sglang-015", ["--mem-fraction-static", "--context-length"]),
    "cuda_graph_oom": (SEED, "crash:sglang-001", ["--cuda-graph-max-bs", "--disable-cuda-graph"]),
    # the plan already keeps MTP the way SGLang's message asks (extra_buffer, SPEC_V2), so the refusal is fixed
    # by the last resort, MTP off, said so in the fix
    "speculative_config_invalid": (f"{SEED} with stock MTP", "crash:sglang-010", ["--speculative-algorithm"]),
    "gpu_oom_weights": ("start Llama-3.1-8B-Instruct on CT129 with tp 1", "crash:sglang-025", ["--tp-size"]),
    "port_in_use": (SEED, "crash:port", ["--port"]),
}


@pytest.mark.parametrize("category", sorted(RECOVERABLE))
async def test_each_recoverable_category_reaches_ready_within_two_automatic_relaunches(sshd, simhost, tmp_path,
                                                                                       category):
    text, scenario, flags = RECOVERABLE[category]
    simhost.set_scenario(scenario, heals_when_changed=flags)
    try:
        outcome, thread, pending, _ = await _run(sshd, simhost, tmp_path, text, auto_fix=[category])
    finally:
        simhost.terminate_processes()
    assert outcome.state == "ready", " | ".join(_story(thread))
    assert thread.of(Diagnosed)[0].diagnosis.category == category
    relaunches = len(_auto_infos(thread))
    assert 1 <= relaunches <= 2 and len(thread.of(Launched)) == relaunches + 1
    print(f"\n{category}: ready after {relaunches} automatic relaunch(es)")
