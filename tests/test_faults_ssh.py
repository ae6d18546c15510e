"""Fault injection over a real sshd: each test asserts the exact outcome (launch count, thread events, store rows).

- the bot SIGKILLed while following, then resumed: the server keeps running, nothing lost or posted twice;
- the bot away while the server died: resume reports the crash with a diagnosis;
- the host drops off the network mid-follow and comes back: the follower reconnects and resumes at its offset;
- the host unreachable at launch time: the launch is not guessed; resume checks the launch record, launches once;
- two deploys to one host at once: one launch, the other refused naming who holds the GPUs;
- a changed host key: refused with a clear message, nothing run.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from bot.mentions import mention
from bot.config import Secrets, parse_config
from bot.events import (
    Failed,
    Info,
    Launched,
    LogExcerpt,
    Planned,
    Ready,
    RecordingThread,
)
from bot.launch import launch
from bot.pipeline import Pipeline, Requester
from bot.store import Store
from tests.ports import port_range
from tests.procs import pid_alive
from tests.sshd import _keygen

ROOT = Path(__file__).resolve().parents[1]


def config_dict(sshd, simhost) -> dict:
    host = {**simhost.host_config(), **sshd.host_overrides(), "gpus": "2x NVIDIA RTX A6000"}
    return {"hosts": {"CT129": host}, "policy": {"approvers": ["UAPPROVER"], "min_margin_gib": 0.5, "port_range": port_range()},
            # Nothing cut from excerpts here, so that every log line can be accounted for.
            "slack": {"excerpt_interval_s": 0.2, "excerpt_max_lines": 200}}



def log_lines(path: str) -> list[str]:
    return [line.rstrip() for line in Path(path).read_text().splitlines()]


def printed_log_lines(text: str) -> list[str]:
    return [line.split("│ ", 1)[1].rstrip() for line in text.splitlines() if "│ " in line]


def wait_for(predicate, timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def async_wait_for(predicate, timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def cli(config: Path, db: Path, *args: str, stdout=None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "bot.cli", "--config", str(config), "--db", str(db), *args],
                            cwd=ROOT, stdout=stdout or subprocess.PIPE, stderr=subprocess.STDOUT,
                            env={**os.environ, "COLUMNS": "400"})


def test_bot_sigkilled_while_following_resumes_without_losing_or_repeating_lines(sshd, simhost, tmp_path):
    simhost.set_scenario("healthy", periodic_interval_s=0.2)
    config = tmp_path / "app.yaml"
    config.write_text(yaml.safe_dump(config_dict(sshd, simhost)))
    db = tmp_path / "state.db"
    out1, out2 = tmp_path / "bot1.out", tmp_path / "bot2.out"
    with open(out1, "w") as handle:
        bot = cli(config, db, "ask", "start Qwen3.6-27B on CT129", "--follow", stdout=handle)
    try:
        wait_for(lambda: "ready at" in out1.read_text() and out1.read_text().count("Decode batch") >= 3,
                 what="ready and three decode lines")
        bot.send_signal(signal.SIGKILL)
        bot.wait(timeout=10)
    finally:
        if bot.poll() is None:
            bot.kill()
    store = Store(db)
    (dep,) = asyncio.run(store.active_deployments("CT129"))
    assert dep.state == "ready" and pid_alive(dep.handle.pid)  # the server is detached: the bot's death did not touch it
    with open(out2, "w") as handle:
        resumed = cli(config, db, "resume", stdout=handle)
    try:
        wait_for(lambda: "resumed following" in out2.read_text() and out2.read_text().count("Decode batch") >= 2,
                 what="the resumed bot to print new lines")
        stop = cli(config, db, "ask", "stop Qwen3.6-27B on CT129")
        assert stop.wait(timeout=60) == 0, stop.stdout.read().decode()
        assert resumed.wait(timeout=60) == 0
    finally:
        if resumed.poll() is None:
            resumed.kill()
    assert not pid_alive(dep.handle.pid)
    seen = printed_log_lines(out1.read_text()) + printed_log_lines(out2.read_text())
    assert seen == log_lines(dep.handle.log_path)  # every line once, in order, across the kill
    assert (asyncio.run(store.get_deployment(dep.id))).state == "stopped"
    store.close()


def _killed_while_no_bot_watches(sshd, simhost, tmp_path, kill) -> tuple[Store, str, str]:
    """Start a server with one `ask`, ``kill(engine pid)`` with no bot running, then `resume`: (the store, the
    deployment's id, what resume printed)."""
    config = tmp_path / "app.yaml"
    config.write_text(yaml.safe_dump(config_dict(sshd, simhost)))
    db = tmp_path / "state.db"
    bot = cli(config, db, "ask", "start Qwen3.6-27B on CT129")
    assert bot.wait(timeout=60) == 0, bot.stdout.read().decode()
    store = Store(db)
    (dep,) = asyncio.run(store.active_deployments("CT129"))
    kill(dep.handle.pid)
    wait_for(lambda: not pid_alive(dep.handle.pid), what="the engine to die")
    resumed = cli(config, db, "resume")
    output = resumed.communicate(timeout=60)[0].decode()
    assert resumed.returncode == 1, output
    return store, dep.id, output


def test_server_that_died_while_the_bot_was_away_is_reported_crashed_on_resume(sshd, simhost, tmp_path):
    # the host's OOM killer, say: the engine alone, so its supervisor writes exit 137
    store, dep_id, output = _killed_while_no_bot_watches(sshd, simhost, tmp_path,
                                                         lambda pid: os.kill(pid, signal.SIGKILL))
    # It had been ready: since 29c9302 a death in service says how long it served ("crashed after 3 s of service
    # (exit 137)"), where a start-up crash says "the server exited (code N)".
    assert "resumed following" in output and "of service (exit 137)" in output
    after = asyncio.run(store.get_deployment(dep_id))
    assert after.state == "crashed" and after.exit_code == 137
    assert after.diagnosis is not None and after.diagnosis.category == "host_oom_killed"
    store.close()


def test_server_killed_with_its_supervisor_is_a_crash_not_a_healthy_log(sshd, simhost, tmp_path):
    """The whole process group SIGKILLed (a `kill -9 -PGID`, a container stopped): no exit status is written, and
    the log ends on the ready line. The diagnosis of a process known gone must not read that log as healthy."""
    store, dep_id, output = _killed_while_no_bot_watches(sshd, simhost, tmp_path,
                                                         lambda pid: os.killpg(os.getpgid(pid), signal.SIGKILL))
    after = asyncio.run(store.get_deployment(dep_id))
    assert after.state == "crashed" and after.exit_code is None
    diagnosis = after.diagnosis
    assert diagnosis is not None and diagnosis.category == "other", diagnosis
    assert "no exit status recorded" in diagnosis.cause and "while the server was up" in diagnosis.cause
    assert diagnosis.alternatives == ["host_oom_killed"]
    assert any("dmesg" in step and "uptime" in step for step in diagnosis.next_steps), diagnosis.next_steps
    assert "healthy" not in output.split("resumed following", 1)[1]
    store.close()


async def test_host_dropping_mid_follow_reconnects_and_resumes_at_its_offset(sshd, simhost, tmp_path):
    simhost.set_scenario("healthy", periodic_interval_s=0.2)
    store = Store(tmp_path / "state.db")
    pipeline = Pipeline(parse_config(config_dict(sshd, simhost)), store, secrets=Secrets())
    thread = RecordingThread()
    task = asyncio.create_task(
        pipeline.handle_text("start Qwen3.6-27B on CT129", thread, Requester(user="U1"), until_ready=False))
    try:
        await async_wait_for(lambda: thread.of(Ready), what="ready")
        excerpts_before = len(thread.of(LogExcerpt))
        sshd.drop()
        await asyncio.sleep(1.5)
        sshd.start()
        await async_wait_for(lambda: any("reconnecting" in e.message for e in thread.of(Info)), what="reconnect note")
        await async_wait_for(lambda: len(thread.of(LogExcerpt)) > excerpts_before + 2, what="lines after reconnect")
        stop = await pipeline.handle_text("stop Qwen3.6-27B on CT129", RecordingThread(), Requester(user="U1"))
        assert stop.state == "stopped"
        outcome = await asyncio.wait_for(task, 60)
        assert outcome.state == "stopped"
        dep = outcome.deployment
        seen = [line.rstrip() for e in thread.of(LogExcerpt) for line in e.lines]
        assert seen == log_lines(dep.handle.log_path)  # resumed at the exact byte offset: nothing lost, nothing twice
        assert pipeline.remotes.get("CT129").connects >= 2
        assert len(thread.of(Launched)) == 1
    finally:
        if not task.done():
            task.cancel()
        await pipeline.close()
        store.close()


class DropOnPlanned(RecordingThread):
    """The host drops off the network between the plan and the launch."""

    def __init__(self, sshd) -> None:
        super().__init__()
        self.sshd = sshd

    async def emit(self, event) -> None:
        await super().emit(event)
        if isinstance(event, Planned):
            self.sshd.drop()


async def test_host_unreachable_at_launch_is_checked_before_anything_is_retried(sshd, simhost, tmp_path):
    store = Store(tmp_path / "state.db")
    pipeline = Pipeline(parse_config(config_dict(sshd, simhost)), store, secrets=Secrets())
    thread = DropOnPlanned(sshd)
    try:
        outcome = await pipeline.handle_text("start Qwen3.6-27B on CT129", thread, Requester(user="U1"))
        assert outcome.state == "failed" and outcome.exit_code == 1
        (failed,) = thread.of(Failed)
        assert "cannot reach" in failed.message and "nothing is launched twice" in failed.message
        assert thread.of(Launched) == [] and simhost.processes() == []
        (dep,) = await store.active_deployments("CT129")
        assert dep.state == "launching" and dep.handle is None
        sshd.start()
        resumed_thread = RecordingThread()
        resumed = await pipeline.resume(dep, resumed_thread, until_ready=True)
        assert resumed.state == "ready"
        assert len(resumed_thread.of(Launched)) == 1 and len(simhost.processes()) >= 1
        # A retried launch of the same deployment finds the host's launch record: nothing starts twice.
        current = await store.get_deployment(dep.id)
        record = await launch(pipeline.remotes.get("CT129"), pipeline.host_config("CT129"), current.plan, dep.id)
        assert record.already_launched and record.pid == current.handle.pid
        assert len([p for p in simhost.processes() if pid_alive(p)]) == len(simhost.processes())
        await pipeline.handle_text("stop Qwen3.6-27B on CT129", RecordingThread(), Requester(user="U1"))
    finally:
        await pipeline.close()
        store.close()


async def test_two_deploys_to_one_host_at_once_launch_once_and_name_the_holder(sshd, simhost, tmp_path):
    store = Store(tmp_path / "state.db")
    pipeline = Pipeline(parse_config(config_dict(sshd, simhost)), store, secrets=Secrets())
    first, second = RecordingThread(), RecordingThread()
    try:
        outcomes = await asyncio.gather(
            pipeline.handle_text("start Qwen3.6-27B on CT129 on both GPUs", first, Requester(user="UALICE")),
            pipeline.handle_text("start Qwen3-32B on CT129 on both GPUs", second, Requester(user="UBOB")),
        )
        states = sorted(o.state for o in outcomes)
        assert states == ["ready", "rejected"], states
        launches = first.of(Launched) + second.of(Launched)
        assert len(launches) == 1
        loser = first if outcomes[0].state == "rejected" else second
        winner_user = "UALICE" if loser is second else "UBOB"
        (refusal,) = loser.of(Failed)
        assert "CT129 GPU 0-1" in refusal.message and f"started by {mention(winner_user)}" in refusal.message
        await pipeline.handle_text("stop everything on CT129", RecordingThread(), Requester(user=winner_user))
    finally:
        await pipeline.close()
        store.close()


async def test_changed_host_key_is_refused_and_nothing_runs(sshd, simhost, tmp_path):
    other_key = _keygen(tmp_path / "impostor_key", "impostor")
    Path(sshd.known_hosts).write_text(f"[127.0.0.1]:{sshd.port} {other_key}\n")
    store = Store(tmp_path / "state.db")
    pipeline = Pipeline(parse_config(config_dict(sshd, simhost)), store, secrets=Secrets())
    thread = RecordingThread()
    try:
        outcome = await pipeline.handle_text("start Qwen3.6-27B on CT129", thread, Requester(user="U1"))
        assert outcome.state == "failed"
        (failed,) = thread.of(Failed)
        assert "host key" in failed.message and "Refusing to connect" in failed.message
        assert thread.of(Launched) == [] and simhost.processes() == []
        assert await store.active_deployments() == []
    finally:
        await pipeline.close()
        store.close()
