"""The Slack surface's saved messages (handlers/slack/refs.py) across a restart of the bot: boards and approval
views are read back from the store's real SQLite file, and the bot's own mentions in them stay mentions.

A restart is simulated the way it changes what matters here: the process's mark key (bot.mentions) is a new one.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

import bot.mentions
from bot.mentions import mention
from bot.store import Store
from handlers.slack.blocks.approval import ApprovalView, approval_blocks
from handlers.slack.blocks.status import status_blocks
from handlers.slack.board import StatusBoard, StepState
from handlers.slack.refs import ApprovalMessage, SlackRefs

CHANNEL = "C0DEPLOY"
FORGED = "\x1f@U0EVIL.0123456789ab\x1f"  # a mark with a key no process of this bot had


def _text(blocks: list) -> str:
    return json.dumps([block.to_dict() for block in blocks], ensure_ascii=False)


@pytest.fixture
def refs(tmp_path: Path):
    store = Store(tmp_path / "db.sqlite3")
    yield SlackRefs.beside(store)
    store.close()


def _restart(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bot.mentions, "_KEY", "feedfacecafe")


async def test_mentions_in_a_saved_approval_stay_mentions_after_a_restart(refs: SlackRefs,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    view = ApprovalView(approval_id="a1", title="stop Qwen3-8B on sim",
                        why=[f"Qwen3-8B was started by {mention('U0ALICE')}", f"the log said {FORGED}"],
                        requested_by="U0BOB", expires_at=datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc))
    await refs.save_approval(ApprovalMessage(approval_id="a1", channel=CHANNEL, ts="1.2", view=view))
    _restart(monkeypatch)
    loaded = await refs.approval("a1")
    assert loaded is not None
    shown = _text(approval_blocks(loaded.view))
    assert "was started by <@U0ALICE>" in shown
    assert "the log said @U0EVIL" in shown and "<@U0EVIL>" not in shown  # a forgery is still plain text
    # Saved again (as a decision does) and read again after one more restart: still the same mention.
    await refs.save_approval(loaded)
    monkeypatch.setattr(bot.mentions, "_KEY", "0badc0ffee00")
    again = await refs.approval("a1")
    assert again is not None and "was started by <@U0ALICE>" in _text(approval_blocks(again.view))


async def test_mentions_on_a_saved_board_stay_mentions_after_a_restart(refs: SlackRefs,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    board = StatusBoard(title="stop Qwen3-8B on sim", action="stop")
    board.steps["approve"] = StepState(status="running",
                                       text=f"waiting for an approver: Qwen3-8B was started by {mention('U0ALICE')}")
    await refs.save_board(CHANNEL, "1.1", "1.2", board)
    _restart(monkeypatch)
    loaded = await refs.board(CHANNEL, "1.2")
    assert loaded is not None
    assert "was started by <@U0ALICE>" in _text(status_blocks(loaded))


async def test_a_board_saved_before_keys_were_kept_still_loads(refs: SlackRefs, tmp_path: Path) -> None:
    board = StatusBoard(title="start Qwen3-8B on sim")
    board.steps["parse"] = StepState(status="done", text="start Qwen3-8B on sim")
    await refs._run("INSERT INTO slack_status_boards (channel, status_ts, thread_ts, board, updated_at) "
                    "VALUES (?,?,?,?,?)", (CHANNEL, "9.9", "9.8", board.model_dump_json(), "2026-01-01T00:00:00"))
    assert await refs.board(CHANNEL, "9.9") == board
