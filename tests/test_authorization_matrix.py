"""Who may do what: every action, from /deploy and from a deployment's thread, for every kind of user, with the
exact outcome of each cell, through the real Bolt app with signed requests and the local Slack server.

Users: the OWNER (started the deployment), the APPROVER (policy.approvers), an ALLOWED user (in the host's
allowed_users, neither owner nor approver), a STRANGER (not in allowed_users) and an OUTSIDER (an allowed user
writing in a channel outside allowed_channels). The policy's memory margin is set above anything a plan can have,
so every start waits for an approval (thin_margin): a start that gets that far is the "accepted" outcome, and no
cell but the owner's own stop/restart changes what runs.

Outcomes: ``refused`` (an ephemeral 🚫, audited, nothing changes), ``approval`` (an approval is posted, nothing
stops), ``runs`` (the action's answer is posted), ``ignored`` (no answer at all), ``not_a_command`` (the parser's
answer: /deploy has no `diagnose`), ``not_an_approver`` (a click answered to the clicker only), ``denied``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests import slack_signing
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
    make_bot,  # noqa: F401 (the fixture)
    process_gone,
)

OWNER, ALLOWED, STRANGER = REQUESTER, BYSTANDER, "U0MALLORY"
ELSEWHERE = "C0ELSEWHERE"
USERS = {"owner": (OWNER, CHANNEL), "approver": (APPROVER, CHANNEL), "allowed": (ALLOWED, CHANNEL),
         "stranger": (STRANGER, CHANNEL), "outsider": (ALLOWED, ELSEWHERE)}
#: No answer within this long counts as ignored (the bot answers a command in well under it).
QUIET_S = 1.0

SLASH = {"start": f"start {MODEL} on {HOST}", "stop": f"stop {MODEL} on {HOST}",
         "restart": f"restart {MODEL} on {HOST}", "status": f"status {HOST}", "logs": f"logs {MODEL} on {HOST}",
         "diagnose": f"diagnose {MODEL} on {HOST}"}
THREAD = {"start": "start", "stop": "stop", "restart": "restart", "status": "status", "logs": "logs 5",
          "diagnose": "diagnose"}

# --------------------------------------------------------------------------------------------- the matrix
# (surface, action) -> outcome per user. The owner's own stop and restart are checked last, on their own.
EXPECTED: dict[tuple[str, str], dict[str, str]] = {
    ("slash", "start"): {"owner": "approval", "approver": "approval", "allowed": "approval",
                         "stranger": "refused", "outsider": "refused"},
    ("slash", "stop"): {"approver": "approval", "allowed": "approval", "stranger": "refused", "outsider": "refused"},
    ("slash", "restart"): {"approver": "approval", "allowed": "approval", "stranger": "refused",
                           "outsider": "refused"},
    ("slash", "status"): {"owner": "runs", "approver": "runs", "allowed": "runs", "stranger": "refused",
                          "outsider": "refused"},
    ("slash", "logs"): {"owner": "runs", "approver": "runs", "allowed": "runs", "stranger": "refused",
                        "outsider": "refused"},
    ("slash", "diagnose"): {user: "not_a_command" for user in USERS},
    ("thread", "start"): {user: "ignored" for user in USERS},
    ("thread", "stop"): {"approver": "approval", "allowed": "approval", "stranger": "refused", "outsider": "ignored"},
    ("thread", "restart"): {"approver": "approval", "allowed": "approval", "stranger": "refused",
                            "outsider": "ignored"},
    ("thread", "status"): {"owner": "runs", "approver": "runs", "allowed": "runs", "stranger": "refused",
                           "outsider": "ignored"},
    ("thread", "logs"): {"owner": "runs", "approver": "runs", "allowed": "runs", "stranger": "refused",
                         "outsider": "ignored"},
    ("thread", "diagnose"): {"owner": "runs", "approver": "runs", "allowed": "runs", "stranger": "refused",
                             "outsider": "ignored"},
}
CLICKS: dict[str, dict[str, str]] = {
    "approve": {"owner": "not_an_approver", "allowed": "not_an_approver", "stranger": "not_an_approver",
                "outsider": "not_an_approver", "approver": "runs"},
    "deny": {"owner": "not_an_approver", "allowed": "not_an_approver", "stranger": "not_an_approver",
             "outsider": "not_an_approver", "approver": "denied"},
}


def _classify_text(text: str) -> str:
    if text.startswith("🚫"):
        return "refused"
    if text.startswith("Approval needed"):
        return "approval"
    if text.startswith("❓"):
        return "not_a_command"
    return "runs"


async def _slash(bot: Harness, user: str, channel: str, text: str) -> str:
    parents_before = len(bot.parents())
    answer = await bot.deploy(text, user=user, channel=channel)
    assert answer.status == 200, answer.body
    body = answer.json()
    if body.get("text"):
        return _classify_text(body["text"])
    await bot.wait(lambda: len(bot.parents()) > parents_before, "a new thread for the request")
    thread_ts = bot.parents()[-1].ts
    await bot.wait(lambda: any(_answer_of(m) for m in bot.replies(thread_ts)), f"an answer to {text!r}")
    return _classify_text(next(t for m in bot.replies(thread_ts) if (t := _answer_of(m))))


def _answer_of(message: Any) -> str:
    """The text of a reply that answers a request (not the status message, which every request has)."""
    text = message.text or ""
    return text if text.startswith(("🚫", "Approval needed", "ℹ️", "log:", "logs:", "⏹️", "Diagnosis:", "❌", "❓")) else ""


async def _thread(bot: Harness, user: str, channel: str, thread_ts: str, text: str) -> str:
    replies_before = len(bot.replies(thread_ts))
    ephemeral_before = len(bot.slack.ok_calls("chat.postEphemeral"))
    answer = await bot.send(slack_signing.thread_message(SIGNING_SECRET, text=text, thread_ts=thread_ts, user=user,
                                                         channel=channel))
    assert answer.status == 200
    try:
        await bot.slack.wait_for(lambda: len(bot.slack.ok_calls("chat.postEphemeral")) > ephemeral_before
                                 or any(_answer_of(m) for m in bot.replies(thread_ts)[replies_before:]),
                                 timeout=QUIET_S if channel != CHANNEL or text == "start" else 45)
    except asyncio.TimeoutError:
        return "ignored"
    if len(bot.slack.ok_calls("chat.postEphemeral")) > ephemeral_before:
        refusal = bot.slack.ok_calls("chat.postEphemeral")[-1].args
        assert refusal["user"] == user
        return _classify_text(refusal["text"])
    return _classify_text(next(t for m in bot.replies(thread_ts)[replies_before:] if (t := _answer_of(m))))


def _approval(bot: Harness, thread_ts: str, index: int = -1) -> tuple[str, Any]:
    asks = [m for m in bot.replies(thread_ts) if (m.text or "").startswith("Approval needed")]
    message = asks[index]
    approval_id = next(e["value"] for b in message.blocks if b["type"] == "actions" for e in b["elements"])
    return approval_id, message


async def _click(bot: Harness, who: str, approve: bool, approval_id: str, message: Any) -> str:
    user, channel = USERS[who]
    url = bot.slack.response_url()
    request = bot.click_request(approval_id, message, user=user, approve=approve, response_url=url)
    if channel != CHANNEL:  # the click arrives from another channel's payload
        request = slack_signing.block_action(
            SIGNING_SECRET, action_id=request_action(approve), value=approval_id, user_id=user, channel_id=channel,
            message_ts=message.ts, thread_ts=message.thread_ts, block_id=f"deploybot_approval:{approval_id}",
            response_url=url)
    assert (await bot.send(request)).status == 200
    await bot.wait(lambda: bool(bot.slack.responses(url)) or _decided(bot, message), "the click's answer")
    if bot.slack.responses(url):
        text = bot.slack.responses(url)[-1]["text"]
        assert f"<@{user}> is not an approver" in text and "&lt;@" not in text  # its own mention stays a mention
        return "not_an_approver"
    return "denied" if "Denied by" in (bot.slack.message(CHANNEL, message.ts).text or "") + str(
        bot.slack.message(CHANNEL, message.ts).blocks) else "runs"


def request_action(approve: bool) -> str:
    from handlers.slack.blocks.approval import APPROVE_ACTION_ID, DENY_ACTION_ID

    return APPROVE_ACTION_ID if approve else DENY_ACTION_ID


def _decided(bot: Harness, message: Any) -> bool:
    now = bot.slack.message(CHANNEL, message.ts)
    return now is not None and not (now.text or "").startswith("Approval needed")


async def test_the_authorization_matrix(make_bot: HarnessFactory) -> None:
    bot = await make_bot(host={"allowed_users": [OWNER, APPROVER, ALLOWED], "allowed_channels": [CHANNEL]},
                         policy={"min_margin_gib": 10_000})
    # The owner's start waits for the margin approval; clicks by everyone else are refused, the approver's runs.
    await bot.deploy(SLASH["start"], user=OWNER)
    await bot.wait(lambda: bool(bot.parents()), "the parent message")
    thread_ts = bot.parents()[-1].ts
    await bot.wait(lambda: any((t or "").startswith("Approval needed") for t in bot.texts(thread_ts)), "approval")
    approval_id, message = _approval(bot, thread_ts)
    got_clicks: dict[str, dict[str, str]] = {"approve": {}, "deny": {}}
    for who in ("owner", "allowed", "stranger", "outsider", "approver"):
        got_clicks["approve"][who] = await _click(bot, who, True, approval_id, message)
    await bot.wait_ready(thread_ts)
    [dep] = bot.deployments()

    got: dict[tuple[str, str], dict[str, str]] = {}
    for (surface, action), row in EXPECTED.items():
        for who in row:
            user, channel = USERS[who]
            if surface == "slash":
                outcome = await _slash(bot, user, channel, SLASH[action])
            else:
                outcome = await _thread(bot, user, channel, thread_ts, THREAD[action])
            got.setdefault((surface, action), {})[who] = outcome
            # Nothing any of these did stopped the owner's server.
            assert not process_gone(dep.handle.pid), (surface, action, who)
            assert bot.store.get_deployment_sync(dep.id).state == "ready", (surface, action, who)
    assert got == EXPECTED

    # Deny: a pending approval (the allowed user's restart in the thread) clicked by each; only the approver's counts.
    denial_id, denial = _approval(bot, thread_ts)
    for who in ("owner", "allowed", "stranger", "outsider", "approver"):
        got_clicks["deny"][who] = await _click(bot, who, False, denial_id, denial)
    assert got_clicks == CLICKS
    assert not process_gone(dep.handle.pid)

    # The refusals were audited with who asked; no launch but the approved one happened.
    refused = {(r["actor"], r["action"]) for r in bot.store.audit_rows_sync() if r["result"] == "refused"}
    assert (STRANGER, "stop") in refused and (STRANGER, "restart") in refused and (ALLOWED, "start") in refused
    assert len(bot.launches()) == 1

    # The owner's own restart and stop run without asking (the relaunch then waits for the margin approval).
    asked_before = sum("Approval needed: restart" in t for t in bot.texts(thread_ts))
    assert await _thread(bot, OWNER, CHANNEL, thread_ts, "restart") == "runs"
    await bot.wait(lambda: process_gone(dep.handle.pid), "the owner's restart stopped the server")
    assert sum("Approval needed: restart" in t for t in bot.texts(thread_ts)) == asked_before
    # The restarts that others asked for are restarts awaiting approval, not stops done behind the owner's back.
    asks = [r["actor"] for r in bot.store.audit_rows_sync() if r["action"] == "request_stop"]
    assert sorted(asks) == sorted([APPROVER, ALLOWED] * 4)  # stop and restart, from /deploy and the thread
    assert bot.store.get_deployment_sync(dep.id).state == "stopped"
