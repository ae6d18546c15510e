"""Text from hosts and users reaches Slack escaped in the message's fallback `text` as well as in its blocks, for
every event type: a log line holding `<!channel>`, `<@U123>`, `<https://x|y>` or `&` notifies nobody and links
nowhere. Through SlackThread, a real AsyncWebClient and the local Slack server (tests/fakeslack.py)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.handles import ProcessHandle
from bot.events import (
    ApprovalDecided,
    ApprovalRequested,
    Crashed,
    Diagnosed,
    Failed,
    Info,
    Launched,
    LogExcerpt,
    ParseFailed,
    Parsed,
    Planned,
    PlanRejected,
    Probed,
    Ready,
    Stopped,
)
from bot.mentions import mention
from bot.models import Diagnosis, EvidenceLine, ParseError, PlanFailure
from handlers.slack.blocks.replies import parent_text
from tests.fakeslack import FakeSlack
from tests.test_slack_render import facts, plan, request
from tests.test_slack_thread import client, new_thread, slack  # noqa: F401 (fixtures)

HOSTILE = "boom <!channel> <@U123> <https://x|y> & <!here|here> <#C0EVIL>"
RAW_MARKUP = ("<!channel>", "<@U123>", "<https://x|y>", "<!here", "<#C0EVIL>")


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _check(call_args: dict[str, Any]) -> None:
    text = call_args.get("text") or ""
    blocks = call_args.get("blocks")
    if isinstance(blocks, str):
        blocks = json.loads(blocks)
    for field, values in (("text", [text]), ("blocks", _strings(blocks or []))):
        for value in values:
            for markup in RAW_MARKUP:
                assert markup not in value, (field, value)
            # every & is an entity: &amp; &lt; &gt; (a bare one would start one of its own)
            assert all(value[i:].startswith(("&amp;", "&lt;", "&gt;")) for i, c in enumerate(value) if c == "&"), \
                (field, value)


async def test_every_event_with_a_hostile_line_is_escaped_in_text_and_blocks(slack: FakeSlack,  # noqa: F811
                                                                              client: AsyncWebClient) -> None:  # noqa: F811
    thread = new_thread(client, interval=0.0)
    await thread.start(parent_text("U0ALICE", HOSTILE))
    when = datetime(2026, 3, 1, 14, 2, tzinfo=timezone.utc)
    events = [
        Parsed(request=request(), note=HOSTILE),
        Probed(facts=facts(), seconds=0.4),
        Planned(plan=plan()),
        Launched(deployment_id="d1", handle=ProcessHandle(pid=9, log_path=f"/logs/{HOSTILE}")),
        LogExcerpt(lines=[HOSTILE, f"INFO {HOSTILE}"]),
        Info(message=HOSTILE, step="launch"),
        Failed(message=HOSTILE, step="launch"),
        Ready(endpoint="http://127.0.0.1:30000", seconds=3.0, measured=HOSTILE),
        Stopped(deployment_id="d1", message=HOSTILE),
        PlanRejected(failure=PlanFailure(reason=HOSTILE, nearest=HOSTILE)),
        ParseFailed(error=ParseError(kind="unknown_model", message=HOSTILE, suggestions=[HOSTILE])),
        ApprovalRequested(approval_id="apv-1", action="stop", title=f"stop {HOSTILE}", reasons=[HOSTILE],
                          plan=plan(), requested_by="U0ALICE", expires_at=when),
        ApprovalDecided(approval_id="apv-1", decision="denied", decided_by="U0BOB", decided_at=when, note=HOSTILE),
        Crashed(exit_code=1, tail=[HOSTILE]),
        Diagnosed(diagnosis=Diagnosis(category="other", cause=HOSTILE,
                                      evidence=[EvidenceLine(line=1, text=HOSTILE)], next_steps=[HOSTILE])),
    ]
    for event in events:
        await thread.emit(event)
    await thread.flush()
    calls = [c for c in slack.ok_calls() if c.method in ("chat.postMessage", "chat.update")]
    assert len(calls) >= len(events) // 2
    for call in calls:
        _check(call.args)
    sent = json.dumps([c.args for c in calls], ensure_ascii=False)
    assert "&lt;!channel&gt;" in sent and "&lt;@U123&gt;" in sent  # shown, literally
    assert thread.delivery_errors == []


async def test_the_bots_own_mentions_stay_mentions_in_text_and_blocks(slack: FakeSlack,  # noqa: F811
                                                                       client: AsyncWebClient) -> None:  # noqa: F811
    thread = new_thread(client, interval=0.0)
    await thread.start("parent")
    await thread.emit(Info(message=f"Qwen3-8B was started by {mention('U0ALICE')}; the log said <@U123>"))
    await thread.flush()
    [reply] = [m for m in slack.replies("C0DEPLOY", thread.thread_ts) if (m.text or "").startswith("ℹ️")]
    assert "<@U0ALICE>" in reply.text and "&lt;@U123&gt;" in reply.text and "<@U123>" not in reply.text
