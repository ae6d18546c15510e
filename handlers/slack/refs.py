"""Where deploybot's Slack messages are: each status message's board and each approval message's ts and view.

Kept in the store's SQLite file (its own tables, created by the store's versioned migrations) so that a restarted bot goes on updating the same
status message, and can still turn an approval message into "Approved by ... at ..." when someone clicks it.
The tables belong to the Slack surface only; the core store knows nothing of Slack messages.

Boards and views hold the bot's own mentions as marks (bot.mentions) whose key lives only as long as the process:
each is saved with the key it was written under and read back re-keyed, so a mention written before a restart is
still a mention after it (and anything else that looks like a mark still shows as plain text).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from bot.mentions import key as mention_key
from bot.mentions import rekey
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
    mention_key: str | None = None  # the key of the marks in `view` when it was saved (bot.mentions.rekey)


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
            (channel, status_ts, thread_ts, json.dumps({"mention_key": mention_key(),
                                                        "board": board.model_dump(mode="json")}), _now()),
        )

    async def board(self, channel: str, status_ts: str) -> StatusBoard | None:
        rows = await self._run("SELECT board FROM slack_status_boards WHERE channel = ? AND status_ts = ?",
                               (channel, status_ts))
        if not rows:
            return None
        saved = json.loads(rows[0][0])
        if "board" not in saved:  # saved without its key (before keys were kept): its marks show as plain text
            return StatusBoard.model_validate(saved)
        return StatusBoard.model_validate(_rekeyed(saved["board"], saved["mention_key"]))

    async def save_approval(self, message: ApprovalMessage) -> None:
        await self._run(
            "INSERT INTO slack_approval_messages (approval_id, data, updated_at) VALUES (?,?,?) "
            "ON CONFLICT(approval_id) DO UPDATE SET data=excluded.data, updated_at=excluded.updated_at",
            (message.approval_id, message.model_copy(update={"mention_key": mention_key()}).model_dump_json(),
             _now()),
        )

    async def approval(self, approval_id: str) -> ApprovalMessage | None:
        rows = await self._run("SELECT data FROM slack_approval_messages WHERE approval_id = ?", (approval_id,))
        if not rows:
            return None
        saved = json.loads(rows[0][0])
        if saved.get("mention_key"):
            saved = _rekeyed(saved, saved["mention_key"]) | {"mention_key": mention_key()}
        return ApprovalMessage.model_validate(saved)

    def close(self) -> None:
        """Nothing of its own to close: the store owns the connection."""


def _rekeyed(value: Any, written_under: str) -> Any:
    """Every string of a saved JSON value with the marks of `written_under` made this process's."""
    if isinstance(value, str):
        return rekey(value, written_under)
    if isinstance(value, list):
        return [_rekeyed(item, written_under) for item in value]
    if isinstance(value, dict):
        return {name: _rekeyed(item, written_under) for name, item in value.items()}
    return value


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()
