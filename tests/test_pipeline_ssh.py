"""The whole pipeline over a REAL OpenSSH sshd on loopback against a simulated GPU host.

`deploybot ask "start Qwen3.6-27B on CT129 with stock MTP"` -> plan (TP 2 on two 48 GB GPUs for the 55.6 GB
checkpoint), PID, excerpts, ready at http://...:PORT; a crash scenario -> crash and diagnosis; bad requests run
nothing on the host.
"""

from __future__ import annotations

import os
import time

import pytest
import yaml

from bot.cli import main as cli_main
from bot.config import Secrets, parse_config
from bot.events import (
    Crashed,
    Diagnosed,
    Launched,
    LogExcerpt,
    Planned,
    Probed,
    Ready,
    RecordingThread,
)
from bot.pipeline import Pipeline, Requester
from bot.store import Store
from tests.ports import port_range
from tests.procs import pid_alive

GIB = 1024**3


def ssh_config(sshd, simhost, **policy) -> dict:
    host = {**simhost.host_config(), **sshd.host_overrides(), "transport": "ssh", "gpus": "2x NVIDIA RTX A6000"}
    return {"hosts": {"CT129": host},
            "policy": {"approvers": ["UAPPROVER"], "min_margin_gib": 0.5, "port_range": port_range(), **policy},
            "slack": {"excerpt_interval_s": 0.2, "excerpt_max_lines": 8}}


class TimedThread(RecordingThread):
    def __init__(self) -> None:
        super().__init__()
        self.started = time.perf_counter()
        self.times: dict[str, float] = {}

    async def emit(self, event) -> None:
        self.times.setdefault(event.kind, time.perf_counter() - self.started)
        await super().emit(event)



async def test_healthy_launch_over_ssh_reaches_ready_then_stops(sshd, simhost, tmp_path):
    config = parse_config(ssh_config(sshd, simhost))
    store = Store(tmp_path / "state.db")
    pipeline = Pipeline(config, store, secrets=Secrets())
    thread = TimedThread()
    try:
        outcome = await pipeline.handle_text("start Qwen3.6-27B on CT129 with stock MTP", thread, Requester(user="U1"))
        assert outcome.state == "ready", [e.kind for e in thread.events]
        plan = thread.of(Planned)[0].plan
        assert plan.tp == 2 and plan.gpus == [0, 1]
        assert 50 * GIB < plan.weights_bytes < 56 * GIB  # 55.56 GB checkpoint, without the vision tower's share
        for flag in ("--speculative-num-steps", "--speculative-eagle-topk", "--speculative-num-draft-tokens",
                     "--speculative-algorithm"):
            assert flag in plan.argv  # all together: SGLang asserts on a partial set
        facts = thread.of(Probed)[0].facts
        assert facts.gpu_source == "nvidia-smi" and len(facts.gpus) == 2
        launched = thread.of(Launched)[0]
        assert pid_alive(launched.handle.pid)
        excerpt_lines = [line for e in thread.of(LogExcerpt) for line in e.lines]
        assert any("Load weight" in line or "KV Cache" in line or "server_args" in line for line in excerpt_lines)
        ready = thread.of(Ready)[0]
        assert ready.endpoint == f"http://127.0.0.1:{plan.port}"
        assert ready.measured and "measured" in ready.measured
        dep = outcome.deployment
        stored = await store.get_deployment(dep.id)
        assert stored.state == "ready" and stored.handle.pid == launched.handle.pid and stored.log_offset > 0
        remote = pipeline.remotes.get("CT129")
        print(f"\nask->PID over sshd: {thread.times['launched']:.2f} s; ask->ready: {thread.times['ready']:.2f} s; "
              f"SSH round trips: {remote.round_trips} (connections: {remote.connects})")
        assert remote.connects == 1  # one pooled connection for the whole pipeline
        assert "Accepted publickey" in sshd.log()  # it really went through sshd
        stop = await pipeline.handle_text("stop Qwen3.6-27B on CT129", RecordingThread(), Requester(user="U1"))
        assert stop.state == "stopped" and "port" in stop.message and "closed" in stop.message
        assert not pid_alive(launched.handle.pid)
        assert (await store.get_deployment(dep.id)).state == "stopped"
    finally:
        await pipeline.close()
        store.close()


async def test_crash_over_ssh_is_diagnosed_with_the_decisive_line(sshd, simhost, tmp_path):
    simhost.set_scenario("crash:sglang-015")  # a real SGLang log: KV pool OOM after the weights loaded
    config = parse_config(ssh_config(sshd, simhost))
    store = Store(tmp_path / "state.db")
    pipeline = Pipeline(config, store, secrets=Secrets())
    thread = RecordingThread()
    try:
        outcome = await pipeline.handle_text("start Qwen3.6-27B on CT129", thread, Requester(user="U1"))
        assert outcome.state == "crashed"
        launched = thread.of(Launched)[0]
        crashed = thread.of(Crashed)[0]
        assert crashed.exit_code == 1 and not pid_alive(launched.handle.pid)
        diagnosis = thread.of(Diagnosed)[0].diagnosis
        assert diagnosis.category == "kv_cache_insufficient"
        assert any("out of memory" in e.text.lower() for e in diagnosis.evidence)
        assert diagnosis.fix is not None and diagnosis.fix.overrides.mem_fraction is not None
        assert (await store.get_deployment(outcome.deployment.id)).state == "crashed"
        # Without an interactive approver the fix waits behind an approval bound to the new plan.
        pending = await store.pending_approvals()
        assert len(pending) == 1 and pending[0]["action"] == "relaunch"
    finally:
        await pipeline.close()
        store.close()


@pytest.mark.parametrize("text,kind", [
    ("start Qwen3.6-27B on CT129; rm -rf /", "unsafe_input"),
    ("start Qwen3.6-27B on CT999", "unknown_host"),
    ("make me a sandwich", "not_understood"),
])
def test_bad_requests_exit_2_and_touch_nothing_on_the_host(sshd, simhost, tmp_path, capsys, text, kind):
    config_path = tmp_path / "app.yaml"
    config_path.write_text(yaml.safe_dump(ssh_config(sshd, simhost)))
    before = sorted(os.listdir(simhost.root))
    code = cli_main(["--config", str(config_path), "--db", str(tmp_path / "s.db"), "ask", text])
    assert code == 2
    out = capsys.readouterr().out
    assert kind in out
    assert sorted(os.listdir(simhost.root)) == before and not (simhost.log_dir.exists() and os.listdir(simhost.log_dir))
    assert "Accepted publickey" not in sshd.log()  # not even a connection was made


def test_ask_cli_prints_plan_pid_and_ready(sshd, simhost, tmp_path, capsys):
    config_path = tmp_path / "app.yaml"
    config_path.write_text(yaml.safe_dump(ssh_config(sshd, simhost)))
    db = str(tmp_path / "s.db")
    code = cli_main(["--config", str(config_path), "--db", db, "ask", "start Qwen3.6-27B on CT129 with stock MTP"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "TP 2" in out and "PID" in out and "ready at http://127.0.0.1:" in out
    assert cli_main(["--config", str(config_path), "--db", db, "ask", "stop Qwen3.6-27B on CT129"]) == 0
