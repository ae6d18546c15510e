"""The SQLite store: migrations, deployments round trip, one-shot approvals, deliveries, audit."""

import asyncio
from datetime import timedelta

from bot.models import Deployment, LaunchPlan, utcnow
from bot.store import MIGRATIONS, Store


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
                     state="starting", pid=123, requested_by="U1", channel="C1", thread_ts="1.1")
    await store.save_deployment(dep)
    loaded = await store.get_deployment("d1")
    assert loaded is not None and loaded.plan == dep.plan and loaded.pid == 123
    assert [d.id for d in await store.active_deployments("CT129")] == ["d1"]
    assert (await store.deployment_for_thread("C1", "1.1")).id == "d1"
    assert await store.last_successful("CT129", "Qwen3.6-27B") is None
    dep.state, dep.ready_at = "ready", utcnow()
    await store.save_deployment(dep)
    assert (await store.last_successful("CT129", "Qwen3.6-27B")).id == "d1"
    dep.state = "stopped"
    await store.save_deployment(dep)
    assert await store.active_deployments("CT129") == []


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
