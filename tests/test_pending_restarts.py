"""A restart policy.restart_on_crash planned survives the bot: killed during the back-off, the next start-up takes
it up at its due time, once; a person's `stop` during the back-off cancels it for good.

Over a REAL OpenSSH sshd on loopback against the simulated GPU host, as tests/test_self_healing.py. "Killing the
bot" is what a kill leaves: the pipeline's task cancelled mid-sleep, its connections and its store closed; the
bot that starts again is a new Pipeline on a new Store over the same SQLite file.
"""

from __future__ import annotations

import asyncio
import os
import signal
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import yaml

from bot.config import Secrets, parse_config
from bot.events import Info, Launched, Ready, RecordingThread
from bot.models import DeployRequest, Deployment, utcnow
from bot.pipeline import Outcome, Pipeline, Requester
from bot.store import Store
from tests.procs import pid_alive
from tests.test_faults_ssh import cli, config_dict, wait_for
from tests.test_pipeline_ssh import ssh_config
from tests.test_self_healing import SEED, _story, _until

PLANNED = "policy restart_on_crash: restarting with the same plan in"


@dataclass
class Served:
    """A pipeline following a ready server that was then killed, waiting out its restart's back-off."""

    pipeline: Pipeline
    store: Store
    thread: RecordingThread
    task: asyncio.Task[Outcome]
    deployment_id: str


def _pipeline(sshd, simhost, db: Path, backoff_s: float) -> tuple[Pipeline, Store]:
    config = parse_config(ssh_config(sshd, simhost, restart_on_crash=True, restart_backoff_s=backoff_s))
    store = Store(db)
    return Pipeline(config, store, secrets=Secrets()), store


async def _killed_in_service(sshd, simhost, db: Path, backoff_s: float) -> Served:
    """Serve as `deploybot serve` does, SIGKILL the server once ready, return once the restart is announced."""
    pipeline, store = _pipeline(sshd, simhost, db, backoff_s)
    thread = RecordingThread()
    task = asyncio.create_task(pipeline.handle_text(SEED, thread, Requester(user="U1"), until_ready=False))
    await _until(lambda: thread.of(Ready), task, thread)
    os.kill(thread.of(Launched)[0].handle.pid, signal.SIGKILL)
    await _until(lambda: any(PLANNED in e.message for e in thread.of(Info)), task, thread)
    return Served(pipeline, store, thread, task, thread.of(Launched)[0].deployment_id)


async def _kill_bot(served: Served) -> None:
    served.task.cancel()
    await asyncio.gather(served.task, return_exceptions=True)
    await served.pipeline.close()
    served.store.close()


async def _cleanup(pipeline: Pipeline, store: Store) -> None:
    for dep in await store.active_deployments("CT129"):
        await pipeline.stop_deployment(dep)
    await pipeline.close()
    store.close()


def _crashed_with_pending(db: Path, deployment_id: str) -> Deployment:
    store = Store(db)
    try:
        dep = store.get_deployment_sync(deployment_id)
    finally:
        store.close()
    assert dep is not None and dep.state == "crashed"
    return dep


def _restarts(store: Store) -> list[dict]:
    return [r for r in store.audit_rows_sync() if r["action"] == "auto_restart"]


async def test_a_restart_pending_when_the_bot_is_killed_is_resumed_once_at_its_due_time(sshd, simhost, tmp_path):
    db = tmp_path / "state.db"
    served = await _killed_in_service(sshd, simhost, db, backoff_s=4)
    await _kill_bot(served)
    assert len(served.thread.of(Launched)) == 1  # killed before the restart launched
    pending = _crashed_with_pending(db, served.deployment_id).chain.pending_restart
    assert pending is not None and pending.fix is None and pending.due_at > pending.planned_at

    pipeline, store = _pipeline(sshd, simhost, db, backoff_s=4)
    thread = RecordingThread()
    try:
        (dep,) = await pipeline.resumable_deployments()
        assert dep.id == served.deployment_id
        outcome = await asyncio.wait_for(pipeline.resume(dep, thread, until_ready=True), 90)
        assert outcome.state == "ready", " | ".join(_story(thread))
        told = [e.message for e in thread.of(Info) if "resuming the restart policy restart_on_crash" in e.message]
        assert len(told) == 1 and "with the same plan" in told[0]
        assert len(thread.of(Launched)) == 1 and thread.of(Launched)[0].deployment_id != dep.id
        (row,) = _restarts(store)
        assert datetime.fromisoformat(row["at"]) >= pending.due_at  # not before its due time
        assert any(r["action"] == "resume" and r["result"] == "pending_restart" for r in store.audit_rows_sync())
        # taken off the store as it launched: a further start-up resumes the new server, never the restart again
        assert (await store.get_deployment(dep.id)).chain.pending_restart is None
        assert [d.id for d in await pipeline.resumable_deployments()] == [outcome.deployment.id]
        assert len(outcome.deployment.chain.restarts) == 1
    finally:
        await _cleanup(pipeline, store)


async def test_a_stop_during_the_back_off_cancels_the_restart_also_for_a_later_resume(sshd, simhost, tmp_path):
    db = tmp_path / "state.db"
    served = await _killed_in_service(sshd, simhost, db, backoff_s=3)
    try:
        dep = await served.store.get_deployment(served.deployment_id)
        stop = DeployRequest(action="stop", host=dep.host, model=dep.model, port=dep.port)
        reply = RecordingThread()
        stopped = await served.pipeline.stop_request(stop, reply, Requester(user="U1"))
        assert stopped.state == "stopped"
        assert any("is cancelled, stopped by request" in e.message for e in reply.of(Info))
        # the back-off running in this bot ends without a launch
        outcome = await asyncio.wait_for(served.task, 60)
        assert outcome.state == "stopped", " | ".join(_story(served.thread))
        assert len(served.thread.of(Launched)) == 1
        assert not _restarts(served.store)
        assert any(r["result"] == "restart_cancelled" for r in served.store.audit_rows_sync())
    finally:
        await _kill_bot(served)

    pipeline, store = _pipeline(sshd, simhost, db, backoff_s=3)
    try:
        assert await pipeline.resumable_deployments() == []
        assert _crashed_with_pending(db, served.deployment_id).chain.pending_restart is None
    finally:
        await _cleanup(pipeline, store)


async def test_a_restart_past_due_when_the_bot_starts_again_launches_at_once(sshd, simhost, tmp_path):
    db = tmp_path / "state.db"
    # A back-off far longer than the test may take: only a due time already past can restart it in time.
    served = await _killed_in_service(sshd, simhost, db, backoff_s=3000)
    await _kill_bot(served)
    store = Store(db)
    dep = store.get_deployment_sync(served.deployment_id)
    assert dep is not None and dep.chain.pending_restart is not None
    past = dep.chain.pending_restart.model_copy(update={"due_at": utcnow() - timedelta(minutes=5)})
    store.update_deployment_sync(dep.id, chain=dep.chain.model_copy(update={"pending_restart": past}))
    store.close()

    pipeline, store = _pipeline(sshd, simhost, db, backoff_s=3000)
    thread = RecordingThread()
    try:
        (dep,) = await pipeline.resumable_deployments()
        outcome = await asyncio.wait_for(pipeline.resume(dep, thread, until_ready=True), 90)
        assert outcome.state == "ready", " | ".join(_story(thread))
        assert any("resuming the restart policy" in e.message and "now (it was due at" in e.message
                   for e in thread.of(Info))
        assert len(thread.of(Launched)) == 1 and len(_restarts(store)) == 1
    finally:
        await _cleanup(pipeline, store)


def test_the_bot_sigkilled_during_the_back_off_restarts_the_server_on_deploybot_resume(sshd, simhost, tmp_path):
    """The same over the CLI with a real SIGKILL of the bot's process: `deploybot resume` takes the restart up."""
    raw = config_dict(sshd, simhost)
    raw["policy"].update(restart_on_crash=True, restart_backoff_s=4)
    config, db, out = tmp_path / "app.yaml", tmp_path / "state.db", tmp_path / "bot1.out"
    config.write_text(yaml.safe_dump(raw))
    with open(out, "w") as handle:
        bot = cli(config, db, "ask", SEED, "--follow", stdout=handle)
    try:
        wait_for(lambda: "ready at" in out.read_text(), timeout=60, what="ready")
        store = Store(db)
        (dep,) = asyncio.run(store.active_deployments("CT129"))
        store.close()
        os.kill(dep.handle.pid, signal.SIGKILL)
        wait_for(lambda: PLANNED in out.read_text(), timeout=60, what="the restart to be planned")
        bot.send_signal(signal.SIGKILL)
        bot.wait(timeout=10)
    finally:
        if bot.poll() is None:
            bot.kill()
    resumed = cli(config, db, "resume", "--until-ready")
    output = resumed.communicate(timeout=90)[0].decode()
    assert resumed.returncode == 0, output
    assert "resuming the restart policy restart_on_crash" in output
    store = Store(db)
    try:
        rows = store.audit_rows_sync()
        assert [r["result"] for r in rows if r["action"] == "launch"] == ["launched", "launched"]
        assert len([r for r in rows if r["action"] == "auto_restart"]) == 1
        (new,) = asyncio.run(store.active_deployments("CT129"))
        assert new.id != dep.id and new.state == "ready" and pid_alive(new.handle.pid)
    finally:
        store.close()
        simhost.terminate_processes()
