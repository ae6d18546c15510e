"""A bot killed before the upgrade to handles (schema 4: a PID and a log path in each deployment row) is started
after it: the store's migration gives the row the process handle the launch agent recorded, and the new bot
resumes following the server that kept running, at the saved byte offset, and stops it (confirmed)."""

from __future__ import annotations

import asyncio
import json
import sqlite3

from bot.config import Secrets, parse_config
from bot.events import Info, LogExcerpt, RecordingThread, Stopped
from bot.handles import ProcessHandle
from bot.pipeline import Pipeline, Requester
from bot.store import Store
from tests.procs import pid_alive
from tests.test_backend_contract import _free_port

MODEL = "Qwen3.6-27B"


def _downgrade_to_schema_4(path, dep_id: str) -> dict:
    """The deployment's row as the bot before the upgrade wrote it (pid and log_path, no handle), schema 4."""
    db = sqlite3.connect(path, isolation_level=None)
    data = json.loads(db.execute("SELECT data FROM deployments WHERE id = ?", (dep_id,)).fetchone()[0])
    handle = data.pop("handle")
    data.update(pid=handle["pid"], log_path=handle["log_path"])
    db.execute("UPDATE deployments SET data = ? WHERE id = ?", (json.dumps(data), dep_id))
    db.execute("PRAGMA user_version = 4")
    db.close()
    return handle


async def test_a_row_written_before_the_upgrade_resumes_and_stops_the_server_that_runs(simhost, tmp_path):
    config = parse_config({"hosts": {"CT129": simhost.host_config()}, "policy": {"min_margin_gib": 0.5},
                           "slack": {"excerpt_interval_s": 0.1, "excerpt_max_lines": 50}})
    db = tmp_path / "state.db"
    before = Pipeline(config, Store(db), secrets=Secrets())
    try:
        outcome = await before.handle_text(f"start {MODEL} on CT129 port {_free_port()}", RecordingThread(),
                                           Requester(user="U1"))
        assert outcome.state == "ready", outcome.message
    finally:
        await before.close()
        before.store.close()
    dep_id = outcome.deployment.id
    old = _downgrade_to_schema_4(db, dep_id)
    assert pid_alive(old["pid"])  # detached: the bot's end did not touch it

    store = Store(db)  # the upgraded bot: migration 5 runs
    after = Pipeline(config, store, secrets=Secrets())
    try:
        dep = await store.get_deployment(dep_id)
        assert isinstance(dep.handle, ProcessHandle) and dep.handle.pid == old["pid"]
        assert dep.handle.exit_path == old["exit_path"] and dep.handle.key == old["key"]  # as the agent recorded
        saved, thread = dep.log_offset, RecordingThread()
        following = asyncio.ensure_future(after.resume(dep, thread, until_ready=False))
        while not thread.of(LogExcerpt):
            await asyncio.sleep(0.05)
        assert any(f"(PID {old['pid']}) from byte {saved}" in e.message for e in thread.of(Info))
        stop = RecordingThread()
        await after.handle_text(f"stop {MODEL} on CT129", stop, Requester(user="U1"))
        (stopped,) = stop.of(Stopped)
        assert f"(PID {old['pid']}) stopped cleanly" in stopped.message, stopped.message
        assert (await asyncio.wait_for(following, 60)).state == "stopped"
        assert not pid_alive(old["pid"])
        log = open(dep.handle.log_path, "rb").read()
        seen = [line for e in thread.of(LogExcerpt) for line in e.lines]
        assert log[saved:].decode().splitlines()[:len(seen)] == seen  # resumed exactly at the saved offset
    finally:
        await after.close()
        store.close()
