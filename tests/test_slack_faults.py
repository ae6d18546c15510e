"""The Slack app when things go wrong: forged or replayed requests, Slack's redeliveries, a crash and the approval of
its fix (refused clicks, a double click, ten approvers at once, a denial, an expiry), a channel the bot is not in,
and Slack's rate limits. Same harness as tests/test_slack_app.py: real Bolt app over real HTTP, FakeSlack, the real
pipeline on a simulated host. Nothing asserts a time.
"""

from __future__ import annotations

import asyncio
import sqlite3

from handlers.slack.blocks.approval import APPROVE_ACTION_ID
from tests import slack_signing
from tests.fakeslack import Message
from tests.test_slack_app import (
    APPROVER,
    BYSTANDER,
    CHANNEL,
    HOST,
    MODEL,
    REQUESTER,
    SIGNING_SECRET,
    Harness,
    HarnessFactory,
    blocks_text,
    bot,  # noqa: F401 (fixture)
    make_bot,  # noqa: F401 (fixture)
    process_gone,
    status_message,
)

#: A real SGLang log (CUDA graph capture failed); its diagnosis proposes a fix: `--cuda-graph-max-bs 16`.
CRASH = "crash:sglang-001"


def table_rows(bot: Harness, table: str) -> int:
    with sqlite3.connect(bot.store.path) as db:
        return db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def approval_messages(bot: Harness, thread_ts: str) -> list[Message]:
    """Approval messages as they stand now (a decided one no longer says "Approval needed")."""
    asked = [c.response["ts"] for c in bot.slack.ok_calls("chat.postMessage")
             if c.args.get("thread_ts") == thread_ts and c.args["text"].startswith("Approval needed")]
    return [m for ts in asked if (m := bot.slack.message(CHANNEL, ts)) is not None]


async def crashed_with_approval(bot: Harness) -> tuple[str, Message, str]:
    """/deploy a server that crashes; returns the thread, the approval message and the approval id."""
    assert (await bot.deploy(f"start {MODEL} on {HOST}")).status == 200
    await bot.wait(lambda: bool(bot.parents()), "the parent message")
    thread_ts = bot.parents()[-1].ts
    await bot.wait(lambda: bool(approval_messages(bot, thread_ts)), "the approval message")
    [approval] = approval_messages(bot, thread_ts)
    button = next(e for b in approval.blocks if b["type"] == "actions" for e in b["elements"]
                  if e["action_id"] == APPROVE_ACTION_ID)
    return thread_ts, approval, button["value"]


def ephemeral_texts(bot: Harness, url: str) -> list[str]:
    answers = bot.slack.responses(url)
    assert all(a.get("response_type") == "ephemeral" and a.get("replace_original") is False for a in answers)
    return [a["text"] for a in answers]


# --------------------------------------------------------------------------------------------- forged requests


async def test_a_bad_signature_or_an_old_timestamp_gets_401_and_runs_nothing(bot: Harness) -> None:
    requests = [
        bot.command(f"start {MODEL} on {HOST}"),
        slack_signing.thread_message(SIGNING_SECRET, text="stop", thread_ts="1700000000.000100", channel=CHANNEL),
        slack_signing.block_action(SIGNING_SECRET, action_id=APPROVE_ACTION_ID, value="apv-1", user_id=APPROVER),
        slack_signing.app_home_opened(SIGNING_SECRET),
    ]
    for request in requests:
        forged = await bot.send(slack_signing.with_bad_signature(request))
        replayed = await bot.send(slack_signing.with_old_timestamp(request, SIGNING_SECRET))
        unsigned = await bot.send(slack_signing.SignedRequest(request.body, request.content_type, request.timestamp, ""))
        assert (forged.status, replayed.status, unsigned.status) == (401, 401, 401)
    await asyncio.sleep(0.3)  # anything wrongly started in the background would show itself; no time asserted
    assert bot.slack.calls() == []  # not even auth.test: refused before any Web API call
    for table in ("deployments", "approvals", "audit", "deliveries"):
        assert table_rows(bot, table) == 0, table


# --------------------------------------------------------------------------------------------- redeliveries


async def test_redelivered_commands_and_events_act_once(bot: Harness) -> None:
    command = bot.command(f"start {MODEL} on {HOST}", trigger_id="1700000000.redelivered")
    answers = [await bot.send(command)]
    answers += await asyncio.gather(bot.send(command, retry=1), bot.send(command, retry=2))
    assert [a.status for a in answers] == [200, 200, 200]
    await bot.wait(lambda: bool(bot.parents()), "the parent message")
    thread_ts = bot.parents()[0].ts
    await bot.wait_ready(thread_ts)
    assert len(bot.parents()) == 1 and len(bot.deployments()) == 1 and len(bot.launches()) == 1

    logs = slack_signing.thread_message(SIGNING_SECRET, text="logs 3", thread_ts=thread_ts, channel=CHANNEL)
    assert [(await bot.send(logs)).status, (await bot.send(logs, retry=1)).status] == [200, 200]
    await bot.wait_reply(thread_ts, "logs: the last 3 lines")
    await asyncio.sleep(0.5)  # a second answer would have come by now; nothing is asserted about time
    # (the answer's own words: the follower's running excerpts say "log: N lines", and one of 3 lines may come too)
    assert [t for t in bot.texts(thread_ts) if t.startswith("logs: ")] == ["logs: the last 3 lines"]


# --------------------------------------------------------------------------------------------- crash and approval


async def test_a_crash_is_diagnosed_and_its_fix_relaunches_once_when_an_approver_clicks(
        make_bot: HarnessFactory) -> None:
    bot = await make_bot(scenario=CRASH, policy={"approvers": [APPROVER, REQUESTER], "self_approve": False})
    thread_ts, approval, approval_id = await crashed_with_approval(bot)
    [crashed] = bot.deployments()
    assert crashed.state == "crashed" and len(bot.launches()) == 1

    status = blocks_text(status_message(bot, thread_ts))
    assert "❌" in status and "the server stopped (exit code" in status and "🩺 *diagnosis*" in status
    diagnosis = next(m for m in bot.replies(thread_ts) if (m.text or "").startswith("Diagnosis:"))
    assert "cuda_graph_oom" in blocks_text(diagnosis) and "Evidence from the log" in blocks_text(diagnosis)
    shown = blocks_text(approval)
    assert "+ --cuda-graph-max-bs 16" in shown and "deploybot_deny" in shown
    assert bot.replies(thread_ts).index(diagnosis) < bot.replies(thread_ts).index(approval)

    # Refused clicks: answered to the clicker only, and nothing changes.
    refused = {}
    for user in (BYSTANDER, REQUESTER):
        url = bot.slack.response_url()
        assert (await bot.send(bot.click_request(approval_id, approval, user=user, response_url=url))).status == 200
        refused[user] = url
    await bot.wait(lambda: all(bot.slack.responses(u) for u in refused.values()), "the refusals")
    assert "is not an approver" in ephemeral_texts(bot, refused[BYSTANDER])[0]
    assert "you asked for this yourself" in ephemeral_texts(bot, refused[REQUESTER])[0]
    assert [c for c in bot.slack.calls("chat.update") if c.args["ts"] == approval.ts] == []
    assert len(bot.launches()) == 1 and (await bot.store.get_approval(approval_id))["state"] == "pending"

    # Ten clicks of the approver at once (a double click, and then some): one decision, one relaunch.
    bot.sim.set_scenario("healthy")
    urls = [bot.slack.response_url() for _ in range(10)]
    answers = await asyncio.gather(*(bot.send(bot.click_request(approval_id, approval, user=APPROVER, response_url=u))
                                     for u in urls))
    assert {a.status for a in answers} == {200}
    await bot.wait(lambda: sum(t.startswith("✅ ready at") for t in bot.texts(thread_ts)) == 1, "the relaunch ready")
    await bot.wait(lambda: sum(bool(bot.slack.responses(u)) for u in urls) == 9, "the nine late clicks answered")
    late = [t for u in urls for t in ephemeral_texts(bot, u)]
    assert len(late) == 9 and all("someone else decided first" in t or "already approved" in t for t in late)

    assert len(bot.launches()) == 2
    decided = bot.slack.message(CHANNEL, approval.ts)
    assert f"Approved by <@{APPROVER}> at" in blocks_text(decided) and APPROVE_ACTION_ID not in blocks_text(decided)
    assert len([c for c in bot.slack.ok_calls("chat.update") if c.args["ts"] == approval.ts]) == 1
    old, new = bot.deployments()
    assert old.state == "crashed" and new.state == "ready" and new.thread_ts == thread_ts
    assert "--cuda-graph-max-bs" in new.plan.argv and not process_gone(new.handle.pid)
    # The relaunch has its own status message in the same thread; the crashed one's board still shows the crash.
    assert new.status_ts not in (None, crashed.status_ts)
    assert f"PID {new.handle.pid}" in blocks_text(bot.slack.message(CHANNEL, new.status_ts))
    assert "the server stopped" in blocks_text(status_message(bot, thread_ts))
    assert len(bot.parents()) == 1


async def test_a_denied_fix_changes_nothing_and_cannot_be_approved_after(make_bot: HarnessFactory) -> None:
    bot = await make_bot(scenario=CRASH)
    thread_ts, approval, approval_id = await crashed_with_approval(bot)
    deny_url, late_url = bot.slack.response_url(), bot.slack.response_url()
    await bot.send(bot.click_request(approval_id, approval, user=APPROVER, approve=False, response_url=deny_url))
    await bot.wait(lambda: "Denied by" in blocks_text(bot.slack.message(CHANNEL, approval.ts)), "the denial")
    await bot.send(bot.click_request(approval_id, approval, user=APPROVER, response_url=late_url))
    await bot.wait(lambda: bool(bot.slack.responses(late_url)), "the late approval answered")
    assert "already denied" in ephemeral_texts(bot, late_url)[0]
    assert bot.slack.responses(deny_url) == []  # the decider sees the message change; no extra answer
    assert APPROVE_ACTION_ID not in blocks_text(bot.slack.message(CHANNEL, approval.ts))
    assert len(bot.launches()) == 1 and len(bot.deployments()) == 1

    # `diagnose` in the thread reads the end of the log again.
    before = sum((t or "").startswith("Diagnosis:") for t in bot.texts(thread_ts))
    await bot.reply("diagnose", thread_ts)
    await bot.wait(lambda: sum(t.startswith("Diagnosis:") for t in bot.texts(thread_ts)) == before + 1, "diagnose")
    again = [m for m in bot.replies(thread_ts) if (m.text or "").startswith("Diagnosis:")][-1]
    assert "cuda_graph_oom" in blocks_text(again)


async def test_an_expired_approval_changes_nothing(make_bot: HarnessFactory) -> None:
    bot = await make_bot(scenario=CRASH, policy={"approval_ttl_minutes": 0.001})  # 60 ms
    thread_ts, approval, approval_id = await crashed_with_approval(bot)
    await asyncio.sleep(0.2)  # past the expiry (this is the scenario's setup, not a timing assertion)
    url = bot.slack.response_url()
    await bot.send(bot.click_request(approval_id, approval, user=APPROVER, response_url=url))
    await bot.wait(lambda: bool(bot.slack.responses(url)), "the answer to the clicker")
    assert "expired" in ephemeral_texts(bot, url)[0]
    await bot.wait(lambda: "Expired at" in blocks_text(bot.slack.message(CHANNEL, approval.ts)), "the expiry shown")
    assert len(bot.launches()) == 1 and (await bot.store.get_approval(approval_id))["state"] == "expired"


async def test_an_approval_nobody_answers_expires_on_its_own_and_its_buttons_go(make_bot: HarnessFactory) -> None:
    bot = await make_bot(scenario=CRASH, policy={"approval_ttl_minutes": 0.001})  # 60 ms
    thread_ts, approval, approval_id = await crashed_with_approval(bot)
    await asyncio.sleep(0.2)  # past the expiry (the scenario's setup, not a timing assertion)
    assert await bot.service.surface.expire_due() == 1
    assert (await bot.store.get_approval(approval_id))["state"] == "expired"
    shown = blocks_text(bot.slack.message(CHANNEL, approval.ts))
    assert "Expired at" in shown and APPROVE_ACTION_ID not in shown
    assert await bot.service.surface.expire_due() == 0  # once
    assert len(bot.launches()) == 1


# --------------------------------------------------------------------------------------------- Slack refuses


async def test_a_channel_the_bot_is_not_in_is_answered_to_the_requester_and_nothing_starts(bot: Harness) -> None:
    bot.slack.fail("chat.postMessage", "not_in_channel")
    url = bot.slack.response_url()
    answer = await bot.send(slack_signing.slash_command(SIGNING_SECRET, text=f"start {MODEL} on {HOST}",
                                                        user_id=REQUESTER, channel_id=CHANNEL, response_url=url))
    assert answer.status == 200
    await bot.wait(lambda: bool(bot.slack.responses(url)), "the answer to the requester")
    [text] = ephemeral_texts(bot, url)
    assert "not_in_channel" in text and "/invite @deploybot" in text
    assert bot.deployments() == [] and bot.launches() == []


async def test_rate_limited_slack_calls_are_waited_out_and_the_deployment_goes_on(bot: Harness) -> None:
    bot.slack.rate_limit("chat.update", times=3, retry_after=0)
    bot.slack.rate_limit("chat.postMessage", times=1, retry_after=0)
    _, thread_ts = await bot.deployed()
    limited = [c for c in bot.slack.calls() if c.status == 429]
    assert len(limited) == 4
    [dep] = bot.deployments()
    final = blocks_text(status_message(bot, thread_ts))
    assert f"PID {dep.handle.pid}" in final and "✅ *ready*" in final and "5/5" in final
    assert len(bot.parents()) == 1  # the retried parent message was posted once


async def test_a_launch_that_waits_for_approval_goes_on_in_the_status_message_that_asked(
        make_bot: HarnessFactory) -> None:
    bot = await make_bot(policy={"min_margin_gib": 40})  # every plan's margin is "thin": the launch needs approval
    assert (await bot.deploy(f"start {MODEL} on {HOST}")).status == 200
    await bot.wait(lambda: bool(bot.parents()), "the parent message")
    thread_ts = bot.parents()[-1].ts
    await bot.wait(lambda: bool(approval_messages(bot, thread_ts)), "the approval message")
    [approval] = approval_messages(bot, thread_ts)
    approval_id = next(e["value"] for b in approval.blocks if b["type"] == "actions" for e in b["elements"])
    asking = status_message(bot, thread_ts)
    assert "⏳ *approve*" in blocks_text(asking) and "memory margin" in blocks_text(approval)
    assert "--model-path" in blocks_text(approval)  # a first launch shows its whole command line
    assert bot.launches() == []

    await bot.send(bot.click_request(approval_id, approval, user=APPROVER))
    await bot.wait_ready(thread_ts)
    [dep] = bot.deployments()
    assert dep.status_ts == asking.ts  # the same status message went on: approve, launch, ready
    board = blocks_text(bot.slack.message(CHANNEL, asking.ts))
    assert f"✅ *approve*  approved by <@{APPROVER}>" in board and f"PID {dep.handle.pid}" in board and "✅ *ready*" in board
    assert len([m for m in bot.replies(thread_ts) if m.ts != asking.ts and "*parse*" in blocks_text(m)]) == 0
    assert len(bot.launches()) == 1


async def test_an_approval_whose_plan_changed_meanwhile_is_asked_again(make_bot: HarnessFactory) -> None:
    bot = await make_bot(scenario=CRASH)
    thread_ts, approval, approval_id = await crashed_with_approval(bot)
    # Someone else takes memory on the GPU meanwhile: the plan that was approved would no longer be what runs.
    bot.sim.set_gpu_processes([{"gpu": 0, "used_mib": 30000, "name": "someone-elses-training"}])
    url = bot.slack.response_url()
    await bot.send(bot.click_request(approval_id, approval, user=APPROVER, response_url=url))
    await bot.wait(lambda: len(approval_messages(bot, thread_ts)) == 2, "a new approval request")
    await bot.wait(lambda: bool(bot.slack.responses(url)), "the answer to the clicker")
    assert "approve the new request" in ephemeral_texts(bot, url)[0]
    old = blocks_text(bot.slack.message(CHANNEL, approval.ts))
    assert "Superseded by a newer plan" in old and APPROVE_ACTION_ID not in old
    assert APPROVE_ACTION_ID in blocks_text(approval_messages(bot, thread_ts)[-1])
    assert len(bot.launches()) == 1
    assert (await bot.store.get_approval(approval_id))["state"] == "superseded"
