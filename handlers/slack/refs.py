"""Where deploybot's Slack messages are: each status message's board and each approval message's ts and view.

Kept in the store's SQLite file (its own tables, created by the store's versioned migrations) so that a restarted bot goes on updating the same
status message, and can still turn an approval message into "Approved by ... at ..." when someone clicks it.
The tables belong to the Slack surface only; the core store knows nothing of Slack messages.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from bot.models import Frozen
from bot.store import Store
from handlers.slack.blocks.approval import ApprovalView
from handlers.slack.board import StatusBoard

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
    """Implements handlers.slack.thread.MessageRefs on the store's SQLite file (tables from its migration 3)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    @classmethod
    def beside(cls, store: Store) -> "SlackRefs":
        """Refs kept in the same file as the store (one file to back up, one to move)."""
        return cls(store)

    async def _run(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        return await self._store.sql(sql, params)

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
        """Nothing of its own to close: the store owns the connection."""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()
