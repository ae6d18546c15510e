"""Where deploybot's Slack messages are: each status message's board and each approval message's ts and view.

Kept in the store's SQLite file (own tables, own connection) so that a restarted bot goes on updating the same
status message, and can still turn an approval message into "Approved by ... at ..." when someone clicks it.
The tables belong to the Slack surface only; the core store knows nothing of Slack messages.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bot.models import Frozen
from bot.store import Store
from handlers.slack.render import ApprovalView, StatusBoard

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS slack_status_boards (
        channel TEXT NOT NULL,
        status_ts TEXT NOT NULL,
        thread_ts TEXT,
        board TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (channel, status_ts)
    )""",
    """CREATE TABLE IF NOT EXISTS slack_approval_messages (
        approval_id TEXT PRIMARY KEY,
        data TEXT NOT NULL,
        updated_at TEXT NOT NULL
    )""",
)


class ApprovalMessage(Frozen):
    """An approval message in Slack: where it is, what it shows, and the status message of the thread that asked
    (so a decision made after a restart still reaches both)."""

    approval_id: str
    channel: str
    ts: str
    thread_ts: str | None = None
    status_ts: str | None = None
    view: ApprovalView


class SlackRefs:
    """Implements handlers.slack.thread.MessageRefs on SQLite."""

    def __init__(self, path: str | Path) -> None:
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30)
        self._lock = threading.Lock()
        self._db.execute("PRAGMA journal_mode=WAL")  # the store opens the same file in WAL mode too
        self._db.execute("PRAGMA busy_timeout=30000")
        for statement in _SCHEMA:
            self._db.execute(statement)

    @classmethod
    def beside(cls, store: Store) -> "SlackRefs":
        """Refs kept in the same file as the store (one file to back up, one to move)."""
        return cls(store.path)

    def _run_sync(self, sql: str, params: tuple[Any, ...]) -> list[sqlite3.Row]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    async def _run(self, sql: str, params: tuple[Any, ...]) -> list[sqlite3.Row]:
        return await asyncio.to_thread(self._run_sync, sql, params)

    async def save_board(self, channel: str, thread_ts: str | None, status_ts: str, board: StatusBoard) -> None:
        await self._run(
            "INSERT INTO slack_status_boards (channel, status_ts, thread_ts, board, updated_at) VALUES (?,?,?,?,?) "
            "ON CONFLICT(channel, status_ts) DO UPDATE SET board=excluded.board, updated_at=excluded.updated_at",
            (channel, status_ts, thread_ts, board.model_dump_json(), _now()),
        )

    async def board(self, channel: str, status_ts: str) -> StatusBoard | None:
        rows = await self._run("SELECT board FROM slack_status_boards WHERE channel = ? AND status_ts = ?",
                               (channel, status_ts))
        return StatusBoard.model_validate_json(rows[0][0]) if rows else None

    async def save_approval(self, message: ApprovalMessage) -> None:
        await self._run(
            "INSERT INTO slack_approval_messages (approval_id, data, updated_at) VALUES (?,?,?) "
            "ON CONFLICT(approval_id) DO UPDATE SET data=excluded.data, updated_at=excluded.updated_at",
            (message.approval_id, message.model_dump_json(), _now()),
        )

    async def approval(self, approval_id: str) -> ApprovalMessage | None:
        rows = await self._run("SELECT data FROM slack_approval_messages WHERE approval_id = ?", (approval_id,))
        return ApprovalMessage.model_validate_json(rows[0][0]) if rows else None

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()
