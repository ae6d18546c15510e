"""SQLite: deployments, approvals, the audit trail, and small caches. Survives restarts.

WAL mode, schema versioned with `PRAGMA user_version` and forward-only migrations (bot/store_schema.py). The sqlite3
calls are short and run in a worker thread (`asyncio.to_thread`) so the event loop never blocks on disk.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from platformdirs import user_data_dir

from bot.hostview import HostView
from bot.models import Deployment, DeploymentState
from bot.store_schema import MIGRATIONS

ACTIVE_STATES: tuple[DeploymentState, ...] = ("planned", "launching", "starting", "ready", "stopping")


def default_db_path() -> Path:
    return Path(os.environ.get("DEPLOYBOT_DB") or Path(user_data_dir("deploybot")) / "deploybot.sqlite3")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


class Store:
    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path else default_db_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        self._db.row_factory = sqlite3.Row
        self._lock = threading.Lock()
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=30000")
        self._migrate()

    def _migrate(self) -> None:
        with self._lock:
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    for statement in script.split(";"):
                        if statement.strip():
                            self._db.execute(statement)
                    self._db.execute(f"PRAGMA user_version = {number}")
                    self._db.execute("COMMIT")
                except Exception:
                    self._db.execute("ROLLBACK")
                    raise

    @property
    def schema_version(self) -> int:
        return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    def _execute(self, sql: str, params: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        with self._lock:
            return self._db.execute(sql, params)

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    async def _run(self, fn, *args):  # type: ignore[no-untyped-def]
        return await asyncio.to_thread(fn, *args)

    async def sql(self, statement: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        """One statement on the store's connection, off the event loop (for a surface's own tables)."""
        return await self._run(self._query, statement, params)

    # ------------------------------------------------------------------ deployments

    def save_deployment_sync(self, dep: Deployment) -> None:
        dep.updated_at = datetime.now(timezone.utc)
        self._execute(
            """INSERT INTO deployments (id, host, model, port, state, requested_by, channel, thread_ts,
                                        created_at, updated_at, data)
               VALUES (?,?,?,?,?,?,?,?,?,?,?)
               ON CONFLICT(id) DO UPDATE SET state=excluded.state, port=excluded.port, channel=excluded.channel,
                   thread_ts=excluded.thread_ts, updated_at=excluded.updated_at, data=excluded.data""",
            (dep.id, dep.host, dep.model, dep.port, dep.state, dep.requested_by, dep.channel, dep.thread_ts,
             dep.created_at.isoformat(), dep.updated_at.isoformat(), dep.model_dump_json()),
        )

    async def save_deployment(self, dep: Deployment) -> None:
        await self._run(self.save_deployment_sync, dep)

    def update_deployment_sync(self, deployment_id: str, **fields: Any) -> Deployment | None:
        """Patch some fields atomically (read-modify-write under one lock), so that two writers (the follower
        saving its log offset, a stop setting the state) never overwrite each other's fields."""
        with self._lock:
            rows = self._db.execute("SELECT data FROM deployments WHERE id = ?", (deployment_id,)).fetchall()
            if not rows:
                return None
            dep = Deployment.model_validate_json(rows[0]["data"])
            updated = dep.model_copy(update={**fields, "updated_at": datetime.now(timezone.utc)})
            Deployment.model_validate(updated.model_dump())  # fields are validated like any other write
            self._db.execute("UPDATE deployments SET state = ?, updated_at = ?, data = ? WHERE id = ?",
                             (updated.state, updated.updated_at.isoformat(), updated.model_dump_json(), deployment_id))
            return updated

    async def update_deployment(self, deployment_id: str, **fields: Any) -> Deployment | None:
        return await self._run(lambda: self.update_deployment_sync(deployment_id, **fields))

    def get_deployment_sync(self, deployment_id: str) -> Deployment | None:
        rows = self._query("SELECT data FROM deployments WHERE id = ?", (deployment_id,))
        return Deployment.model_validate_json(rows[0]["data"]) if rows else None

    async def get_deployment(self, deployment_id: str) -> Deployment | None:
        return await self._run(self.get_deployment_sync, deployment_id)

    def deployments_sync(
        self, *, host: str | None = None, states: tuple[str, ...] | None = None, model: str | None = None
    ) -> list[Deployment]:
        sql, params = "SELECT data FROM deployments WHERE 1=1", []
        if host:
            sql += " AND host = ?"
            params.append(host)
        if model:
            sql += " AND model = ?"
            params.append(model)
        if states:
            sql += f" AND state IN ({','.join('?' * len(states))})"
            params.extend(states)
        sql += " ORDER BY created_at"
        return [Deployment.model_validate_json(r["data"]) for r in self._query(sql, tuple(params))]

    async def deployments(self, **kwargs: Any) -> list[Deployment]:
        return await self._run(lambda: self.deployments_sync(**kwargs))

    async def active_deployments(self, host: str | None = None) -> list[Deployment]:
        return await self.deployments(host=host, states=ACTIVE_STATES)

    async def pending_restarts(self, host: str | None = None) -> list[Deployment]:
        """Crashed deployments with a restart the policy planned and has not launched (HealingChain.pending_restart):
        a bot killed during the back-off resumes them on start-up. (JSON in `data`: no column, no migration.)"""
        sql = ("SELECT data FROM deployments WHERE state = 'crashed' "
               "AND json_extract(data, '$.chain.pending_restart') IS NOT NULL")
        params: tuple[Any, ...] = ()
        if host:
            sql, params = sql + " AND host = ?", (host,)
        rows = await self._run(self._query, sql + " ORDER BY created_at", params)
        return [Deployment.model_validate_json(r["data"]) for r in rows]

    def take_pending_restart_sync(self, deployment_id: str) -> Deployment | None:
        """Clear a deployment's pending restart atomically and return the deployment as it was (with it), or None
        when there was none: exactly one caller (the restart launching, or a stop cancelling it) gets it."""
        with self._lock:
            rows = self._db.execute("SELECT data FROM deployments WHERE id = ?", (deployment_id,)).fetchall()
            if not rows:
                return None
            dep = Deployment.model_validate_json(rows[0]["data"])
            if dep.chain.pending_restart is None:
                return None
            cleared = dep.model_copy(update={"chain": dep.chain.model_copy(update={"pending_restart": None}),
                                             "updated_at": datetime.now(timezone.utc)})
            self._db.execute("UPDATE deployments SET updated_at = ?, data = ? WHERE id = ?",
                             (cleared.updated_at.isoformat(), cleared.model_dump_json(), deployment_id))
            return dep

    async def take_pending_restart(self, deployment_id: str) -> Deployment | None:
        return await self._run(self.take_pending_restart_sync, deployment_id)

    async def deployment_for_thread(self, channel: str, thread_ts: str) -> Deployment | None:
        rows = await self._run(
            self._query,
            "SELECT data FROM deployments WHERE channel = ? AND thread_ts = ? ORDER BY created_at DESC LIMIT 1",
            (channel, thread_ts),
        )
        return Deployment.model_validate_json(rows[0]["data"]) if rows else None

    async def last_successful(self, host: str, model: str) -> Deployment | None:
        """The last deployment of this model on this host that reached ready ("same as before")."""
        rows = await self._run(
            self._query,
            """SELECT data FROM deployments WHERE host = ? AND model = ?
               AND json_extract(data, '$.ready_at') IS NOT NULL ORDER BY created_at DESC LIMIT 1""",
            (host, model),
        )
        return Deployment.model_validate_json(rows[0]["data"]) if rows else None

    # ------------------------------------------------------------------ approvals

    async def create_approval(self, approval_id: str, *, deployment_id: str | None, action: str, plan_hash: str | None,
                              requested_by: str | None, expires_at: datetime, data: dict[str, Any]) -> None:
        await self._run(
            self._execute,
            """INSERT INTO approvals (id, deployment_id, action, plan_hash, state, requested_by, created_at,
                                      expires_at, data) VALUES (?,?,?,?,?,?,?,?,?)""",
            (approval_id, deployment_id, action, plan_hash, "pending", requested_by, _now(),
             expires_at.isoformat(), json.dumps(data)),
        )

    async def get_approval(self, approval_id: str) -> dict[str, Any] | None:
        rows = await self._run(self._query, "SELECT * FROM approvals WHERE id = ?", (approval_id,))
        if not rows:
            return None
        row = dict(rows[0])
        row["data"] = json.loads(row["data"])
        return row

    async def decide_approval(self, approval_id: str, state: str, decided_by: str | None) -> bool:
        """One-shot: True only for the single caller that moved it out of `pending` (atomic in SQLite)."""
        cursor = await self._run(
            self._execute,
            "UPDATE approvals SET state = ?, decided_by = ?, decided_at = ? WHERE id = ? AND state = 'pending'",
            (state, decided_by, _now(), approval_id),
        )
        return cursor.rowcount == 1

    async def supersede_approval(self, approval_id: str) -> None:
        """An approved plan that no longer matches the host: recorded as superseded (a new approval is asked)."""
        await self._run(self._execute,
                        "UPDATE approvals SET state = 'superseded' WHERE id = ? AND state = 'approved'", (approval_id,))

    async def pending_approvals(self) -> list[dict[str, Any]]:
        rows = await self._run(self._query, "SELECT * FROM approvals WHERE state = 'pending'", ())
        return [dict(r) | {"data": json.loads(r["data"])} for r in rows]

    # ------------------------------------------------------------------ audit

    async def audit(self, action: str, *, actor: str | None = None, host: str | None = None,
                    deployment_id: str | None = None, result: str | None = None, detail: str | None = None) -> None:
        await self._run(
            self._execute,
            "INSERT INTO audit (at, actor, action, host, deployment_id, result, detail) VALUES (?,?,?,?,?,?,?)",
            (_now(), actor, action, host, deployment_id, result, detail),
        )

    def audit_rows_sync(self, *, host: str | None = None, since: datetime | None = None) -> list[dict[str, Any]]:
        sql, params = "SELECT * FROM audit WHERE 1=1", []
        if host:
            sql += " AND host = ?"
            params.append(host)
        if since:
            sql += " AND at >= ?"
            params.append(since.astimezone(timezone.utc).isoformat())
        sql += " ORDER BY id"
        return [dict(r) for r in self._query(sql, tuple(params))]

    # ------------------------------------------------------------------ caches and deliveries

    def save_host_view_sync(self, view: HostView) -> None:
        self._execute(
            "INSERT INTO host_views (host, probed_at, view) VALUES (?,?,?) "
            "ON CONFLICT(host) DO UPDATE SET probed_at=excluded.probed_at, view=excluded.view",
            (view.host, view.probed_at.isoformat(), view.model_dump_json()),
        )

    async def save_host_view(self, view: HostView) -> None:
        await self._run(self.save_host_view_sync, view)

    def host_views_sync(self) -> dict[str, HostView]:
        return {r["host"]: HostView.model_validate_json(r["view"]) for r in self._query("SELECT host, view FROM host_views", ())}

    def known_models_sync(self) -> dict[str, list[str]]:
        """Each probed host's models, as its last probe listed them."""
        return {host: view.models for host, view in self.host_views_sync().items()}

    async def engine_help(self, host: str, engine: str, version: str) -> str | None:
        rows = await self._run(self._query, "SELECT text FROM engine_help WHERE host=? AND engine=? AND version=?",
                               (host, engine, version))
        return rows[0]["text"] if rows else None

    async def save_engine_help(self, host: str, engine: str, version: str, text: str) -> None:
        await self._run(self._execute, "INSERT OR REPLACE INTO engine_help VALUES (?,?,?,?)", (host, engine, version, text))

    async def first_delivery(self, key: str) -> bool:
        """True the first time a delivery key is seen (a Slack retry of the same request gets False)."""
        cursor = await self._run(self._execute, "INSERT OR IGNORE INTO deliveries (key, at) VALUES (?, ?)", (key, _now()))
        return cursor.rowcount == 1

    def close(self) -> None:
        with self._lock:
            self._db.close()
