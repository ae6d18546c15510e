"""One deployment across two simulated hosts on SGLang's own multi-node runtime (bot/backends/multinode.py): each node
runs the plan with `--nnodes 2 --node-rank R --dist-init-addr HEAD:PORT` and its half of the GPUs, rank 0 serves
HTTP, every rank is followed in one thread, and a crash of rank 1 is the deployment's crash, diagnosed from rank 1's
own log."""

from __future__ import annotations

import json

import pytest

from bot.config import ConfigError, Secrets, parse_config
from bot.events import Crashed, Diagnosed, Launched, LogExcerpt, Probed, Ready, RecordingThread
from bot.handles import MultiNodeHandle
from bot.pipeline import Pipeline, Requester
from bot.simhost import build_sim_host
from bot.store import Store
from tests.ports import port_range
from tests.procs import pid_alive

MODEL = "Qwen3.6-27B"


@pytest.fixture
def nodes(tmp_path):
    head = build_sim_host(tmp_path / "nodeA", ready_after_s=0.8)
    worker = build_sim_host(tmp_path / "nodeB", ready_after_s=0.8)
    for sim in (head, worker):
        sim.set_scenario("healthy", periodic_interval_s=0.3)
    try:
        yield head, worker
    finally:
        head.terminate_processes()
        worker.terminate_processes()


def group_config(head, worker) -> dict:
    return {"hosts": {"nodeA": head.host_config(), "nodeB": worker.host_config(),
                      "pair": {**head.host_config(), "gpus": "4x NVIDIA RTX A6000",
                               "backend": {"kind": "multinode", "members": ["nodeA", "nodeB"], "dist_port": 20555}}},
            # ports of this run's own (tests/ports.py): other tests' simulated engines run on this machine too
            "policy": {"approvers": ["UAPPROVER"], "min_margin_gib": 0.5, "port_range": port_range()},
            "slack": {"excerpt_interval_s": 0.1, "excerpt_max_lines": 50}}


def launch_record(sim, plan_key: str) -> dict:
    return json.loads((sim.log_dir / f"{plan_key}.launch.json").read_text())


async def test_one_deployment_over_two_hosts_reaches_ready_and_stops(nodes, tmp_path):
    head, worker = nodes
    store = Store(tmp_path / "state.db")
    pipeline = Pipeline(parse_config(group_config(head, worker)), store, secrets=Secrets())
    thread = RecordingThread()
    try:
        outcome = await pipeline.handle_text(f"start {MODEL} on pair with tp 4", thread, Requester(user="U1"))
        assert outcome.state == "ready", [getattr(e, "message", e.kind) for e in thread.events]
        facts = thread.of(Probed)[0].facts
        assert [g.index for g in facts.gpus] == [0, 1, 2, 3]  # two nodes' GPUs, node after node
        plan = outcome.deployment.plan
        assert plan.tp == 4 and plan.gpus == [0, 1, 2, 3]
        handle = thread.of(Launched)[0].handle
        assert isinstance(handle, MultiNodeHandle) and [r.host for r in handle.ranks] == ["nodeA", "nodeB"]
        for rank, sim in enumerate((head, worker)):
            record = launch_record(sim, plan.deployment_key)
            argv = record["argv"]
            assert argv[argv.index("--nnodes") + 1] == "2" and argv[argv.index("--node-rank") + 1] == str(rank)
            assert argv[argv.index("--dist-init-addr") + 1] == "127.0.0.1:20555"
            assert argv[argv.index("--tp-size") + 1] == "4"
            assert pid_alive(record["pid"])
        env = (head.log_dir / f"{plan.deployment_key}.log").read_text()
        assert "fired up and ready to roll" in env
        worker_log = (worker.log_dir / f"{plan.deployment_key}.log").read_text()
        assert "TP2]" in worker_log and "fired up" not in worker_log  # node 1 holds ranks 2-3 and serves no HTTP
        lines = [line for e in thread.of(LogExcerpt) for line in e.lines]
        assert any(line.startswith("[rank 1 on nodeB] ") for line in lines)  # every rank is followed
        assert thread.of(Ready)[0].endpoint == f"http://127.0.0.1:{plan.port}"

        stop = await pipeline.handle_text(f"stop {MODEL} on pair", RecordingThread(), Requester(user="U1"))
        assert stop.state == "stopped" and "stopped cleanly" in stop.message, stop.message
        assert not any(pid_alive(r.handle.pid) for r in handle.ranks)
    finally:
        await pipeline.close()
        store.close()


async def test_a_crash_of_rank_1_is_the_deployments_crash(nodes, tmp_path):
    head, worker = nodes
    worker.set_scenario("crash:sglang-015")  # only node 1 fails: a real SGLang log, the KV pool OOM after the weights
    store = Store(tmp_path / "state.db")
    pipeline = Pipeline(parse_config(group_config(head, worker)), store, secrets=Secrets())
    thread = RecordingThread()
    try:
        outcome = await pipeline.handle_text(f"start {MODEL} on pair with tp 4", thread, Requester(user="U1"))
        assert outcome.state == "crashed", [getattr(e, "message", None) or getattr(e, "lines", e.kind)
                                            for e in thread.events]
        lines = [line for e in thread.of(LogExcerpt) for line in e.lines]
        assert any(line.startswith("[rank 1 on nodeB] exited with code") for line in lines)
        diagnosis = thread.of(Diagnosed)[0].diagnosis
        assert diagnosis.category == "kv_cache_insufficient", diagnosis
        crashed = thread.of(Crashed)[0]
        worker_log = (worker.log_dir / f"{outcome.deployment.plan.deployment_key}.log").read_text()
        assert crashed.tail[-1] == worker_log.rstrip("\n").splitlines()[-1]  # the crashed rank's log is read last
        assert diagnosis.evidence[0].text.strip() in worker_log
        assert (await store.get_deployment(outcome.deployment.id)).state == "crashed"
        head_pid = thread.of(Launched)[0].handle.ranks[0].handle.pid
        assert not pid_alive(head_pid)  # half a deployment holds no GPUs: rank 0 was stopped with it
    finally:
        await pipeline.close()
        store.close()


def test_members_must_be_process_hosts_of_the_same_file(tmp_path):
    head = build_sim_host(tmp_path / "nodeA")
    raw = {"hosts": {"nodeA": head.host_config(),
                     "pair": {**head.host_config(), "backend": {"kind": "multinode", "members": ["nodeA", "nodeZ"]}}}}
    with pytest.raises(ConfigError, match="nodeZ"):
        parse_config(raw)
