"""The SQLite store: migrations, deployments round trip, one-shot approvals, deliveries, audit."""

import asyncio
from datetime import timedelta

import json
import sqlite3

from bot.handles import ProcessHandle
from bot.models import Deployment, LaunchPlan, utcnow
from bot.store import Store
from bot.store_schema import MIGRATIONS


def make_plan(**kw) -> LaunchPlan:
    base = dict(host="CT129", model="Qwen3.6-27B", model_path="/m/Qwen3.6-27B", engine="sglang", tp=2, gpus=[0, 1],
                port=30000, argv=["python3", "-m", "sglang.launch_server"], weights_bytes=55_562_855_904,
                kv_bytes_per_token=65536)
    base.update(kw)
    return LaunchPlan(**base)


async def test_schema_is_migrated_to_the_latest_version(tmp_path):
    store = Store(tmp_path / "s.db")
    assert store.schema_version == len(MIGRATIONS)
    store.close()
    again = Store(tmp_path / "s.db")  # reopening applies nothing twice
    assert again.schema_version == len(MIGRATIONS)
    mode = again._db.execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


async def test_deployment_round_trip_and_queries(tmp_path):
    store = Store(tmp_path / "s.db")
    dep = Deployment(id="d1", host="CT129", model="Qwen3.6-27B", engine="sglang", port=30000, plan=make_plan(),
                     state="starting", handle=ProcessHandle(pid=123, log_path="/l/q.log"), requested_by="U1",
                     channel="C1", thread_ts="1.1")
    await store.save_deployment(dep)
    loaded = await store.get_deployment("d1")
    assert loaded is not None and loaded.plan == dep.plan and loaded.handle.pid == 123
    assert [d.id for d in await store.active_deployments("CT129")] == ["d1"]
    assert (await store.deployment_for_thread("C1", "1.1")).id == "d1"
    assert await store.last_successful("CT129", "Qwen3.6-27B") is None
    dep.state, dep.ready_at = "ready", utcnow()
    await store.save_deployment(dep)
    assert (await store.last_successful("CT129", "Qwen3.6-27B")).id == "d1"
    dep.state = "stopped"
    await store.save_deployment(dep)
    assert await store.active_deployments("CT129") == []


def _old_row(dep_id: str, **fields) -> str:
    """A deployment row as schema 4 wrote it: the PID and the log path in the domain, no handle."""
    dep = Deployment(id=dep_id, host="CT129", model="Qwen3.6-27B", engine="sglang", port=30001, plan=make_plan(),
                     state="ready", log_offset=812)
    return json.dumps({k: v for k, v in json.loads(dep.model_dump_json()).items() if k != "handle"} | fields)


async def test_rows_of_schema_4_get_a_process_handle_and_resume_what_runs(tmp_path):
    """A bot killed before the upgrade (PID and log path in its rows) resumes after it: the migration gives each
    row the process handle the launch agent recorded (exit file next to the log, key = the log's name)."""
    path = tmp_path / "old.db"
    db = sqlite3.connect(path, isolation_level=None)
    for number, script in enumerate(MIGRATIONS[:4], start=1):
        for statement in script.split(";"):
            if statement.strip():
                db.execute(statement)
        db.execute(f"PRAGMA user_version = {number}")
    rows = {"d1": _old_row("d1", pid=4242, log_path="/home/deploy/deploybot-logs/Qwen3.6-27B-30001.log"),
            "d2": _old_row("d2", pid=None, log_path=None)}  # recorded before its launch answered
    for dep_id, data in rows.items():
        db.execute("INSERT INTO deployments VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                   (dep_id, "CT129", "Qwen3.6-27B", 30001, "ready", None, None, None, "2026-01-01T00:00:00+00:00",
                    "2026-01-01T00:00:00+00:00", data))
    db.close()
    store = Store(path)
    assert store.schema_version == len(MIGRATIONS)
    migrated = await store.get_deployment("d1")
    assert migrated is not None and migrated.handle == ProcessHandle(
        pid=4242, key="Qwen3.6-27B-30001", log_path="/home/deploy/deploybot-logs/Qwen3.6-27B-30001.log",
        exit_path="/home/deploy/deploybot-logs/Qwen3.6-27B-30001.exit", port=30001)
    assert migrated.handle.label == "PID 4242" and migrated.log_offset == 812 and migrated.state == "ready"
    unlaunched = await store.get_deployment("d2")
    assert unlaunched is not None and unlaunched.handle is None  # resume asks the host's launch record
    assert [d.id for d in await store.active_deployments("CT129")] == ["d1", "d2"]


async def test_an_approval_is_decided_exactly_once_under_concurrent_clicks(tmp_path):
    store = Store(tmp_path / "s.db")
    await store.create_approval("a1", deployment_id=None, action="launch", plan_hash="h", requested_by="U1",
                                expires_at=utcnow() + timedelta(minutes=30), data={"x": 1})
    results = await asyncio.gather(*(store.decide_approval("a1", "approved", f"U{i}") for i in range(10)))
    assert results.count(True) == 1
    row = await store.get_approval("a1")
    assert row["state"] == "approved" and row["data"] == {"x": 1}


async def test_a_delivery_key_is_first_only_once(tmp_path):
    store = Store(tmp_path / "s.db")
    assert await store.first_delivery("slash:abc") is True
    assert await store.first_delivery("slash:abc") is False
    assert await store.first_delivery("slash:def") is True


async def test_audit_filters_by_host(tmp_path):
    store = Store(tmp_path / "s.db")
    await store.audit("launch", actor="U1", host="CT129", result="launched")
    await store.audit("launch", actor="U2", host="CT130", result="failed")
    rows = store.audit_rows_sync(host="CT129")
    assert [(r["actor"], r["result"]) for r in rows] == [("U1", "launched")]
    assert len(store.audit_rows_sync(since=utcnow() - timedelta(minutes=1))) == 2
