"""SlackThread driven through a real AsyncWebClient against FakeSlack (a local Slack-compatible server), plus the
test doubles themselves: FakeSlack's Slack-likeness and the signed requests, checked through a real Bolt app."""

from __future__ import annotations

import asyncio
import functools
import json
import re
from collections.abc import AsyncIterator
from datetime import datetime, timezone

import aiohttp
import pytest
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.errors import SlackApiError
from slack_sdk.models.blocks import Block
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient

from bot.handles import ProcessHandle
from bot.config import Secrets, SlackConfig
from bot.events import Crashed, Diagnosed, Failed, Info, Launched, LogExcerpt, Parsed, Planned, Probed, Ready
from bot.models import Diagnosis, EvidenceLine, Fix, PlanOverrides
from bot.redact import redact
from handlers.slack.client import SlackSetupError, make_web_client
from handlers.slack.blocks.approval import APPROVE_ACTION_ID, ApprovalView
from handlers.slack.blocks.excerpts import excerpt_blocks, excerpt_counts
from handlers.slack.blocks.home import home_view
from handlers.slack.blocks.replies import parent_text
from handlers.slack.thread import SlackThread
from tests import slack_signing
from tests.fakeslack import FakeSlack
from tests.test_slack_render import facts, plan, request

CHANNEL = "C0DEPLOY"
HF_TOKEN = "hf_" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9"
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as server:
        yield server


@pytest.fixture
def client(slack: FakeSlack) -> AsyncWebClient:
    # SLACK_API_URL without the trailing slash: make_web_client must add it.
    return make_web_client(Secrets(slack_bot_token=slack.token, slack_api_url=slack.base_url.rstrip("/")))


def new_thread(client: AsyncWebClient, *, interval: float = 0.0, max_lines: int = 12, **options: object) -> SlackThread:
    config = SlackConfig(excerpt_interval_s=interval, excerpt_max_lines=max_lines)
    return SlackThread(client, CHANNEL, config=config, redact=functools.partial(redact, extra_secrets=[HF_TOKEN]),
                       **options)


def block_text(blocks: list[dict] | None) -> str:
    return json.dumps(blocks or [], ensure_ascii=False)


def excerpt_messages(slack: FakeSlack, thread_ts: str) -> list:
    return [m for m in slack.replies(CHANNEL, thread_ts) if (m.text or "").startswith("log:")]


def counts(message) -> tuple[int, int]:
    return excerpt_counts(Block.parse_all(message.blocks))


def code_lines(message) -> list[str]:
    code = next(b["text"]["text"] for b in message.blocks if b["type"] == "section")
    return code.removeprefix("```\n").removesuffix("\n```").splitlines()


# --------------------------------------------------------------------------------------------- the thread


async def test_one_parent_one_status_message_updated_in_place(slack: FakeSlack, client: AsyncWebClient) -> None:
    seen_ts: list[tuple[str, str]] = []

    async def keep_ts(thread_ts: str, status_ts: str) -> None:
        seen_ts.append((thread_ts, status_ts))

    thread = new_thread(client, on_ts=keep_ts)
    await thread.start(parent_text("U0ALICE", "Qwen3-8B on CT129 with MTP"))
    for event in [Parsed(request=request()), Probed(facts=facts(), seconds=1.2), Planned(plan=plan()),
                  Launched(deployment_id="d1", handle=ProcessHandle(pid=4242, log_path="/logs/qwen.log"))]:
        await thread.emit(event)
    for i in range(40):
        await thread.emit(LogExcerpt(lines=[f"[rank0] loading shard {i}/40"]))
    await thread.emit(Ready(endpoint="http://10.0.0.129:30000", seconds=74, kv_tokens=412_000))
    await thread.flush()

    posts = slack.ok_calls("chat.postMessage")
    parents = [c for c in posts if "thread_ts" not in c.args]
    assert len(parents) == 1
    assert parents[0].args["text"].startswith("<@U0ALICE> asked deploybot:")
    assert thread.thread_ts == parents[0].response["ts"]
    status_posts = [c for c in posts if c.response["ts"] == thread.status_ts]
    assert len(status_posts) == 1 and status_posts[0].args["thread_ts"] == thread.thread_ts
    assert seen_ts == [(thread.thread_ts, thread.status_ts)]

    updates = slack.ok_calls("chat.update")
    assert len(updates) == 5  # parse, probe, plan, launch, ready: one update each, none for log lines
    assert {c.args["ts"] for c in updates} == {thread.status_ts}
    final = slack.message(CHANNEL, thread.status_ts)
    assert final is not None and final.edits == 5
    assert "PID 4242" in block_text(final.blocks) and "http://10.0.0.129:30000" in block_text(final.blocks)
    assert "5/5" in block_text(final.blocks)

    replies = slack.replies(CHANNEL, thread.thread_ts)
    ready = [m for m in replies if (m.text or "").startswith("✅ ready at")]
    assert [m.text for m in ready] == ["✅ ready at http://10.0.0.129:30000 in 74 s, KV cache 412k tokens"]
    assert replies.index(ready[0]) == len(replies) - 1  # the log lines came before the ready line
    shown = sum(counts(m)[0] for m in excerpt_messages(slack, thread.thread_ts))
    cut = sum(counts(m)[1] for m in excerpt_messages(slack, thread.thread_ts))
    assert shown + cut == 40
    assert thread.delivery_errors == []


async def test_excerpts_are_batched_and_no_line_is_lost_uncounted(slack: FakeSlack, client: AsyncWebClient) -> None:
    thread = new_thread(client, interval=0.2, max_lines=12)
    await thread.start("parent")
    bursts, per_burst = 4, 25
    emitted: list[str] = []
    for burst in range(bursts):
        for i in range(per_burst):
            line = f"burst {burst} line {i:02d}"
            emitted.append(line)
            await thread.emit(LogExcerpt(lines=[line]))
        await asyncio.sleep(0.25)  # a pause between bursts, as a real log has; nothing is asserted about time
    await thread.flush()

    messages = excerpt_messages(slack, thread.thread_ts)
    # Lines of one burst arrive without the loop turning, so they can only share a message: at most one per burst.
    assert 1 <= len(messages) <= bursts
    shown_lines: list[str] = []
    total_cut = 0
    for message in messages:
        shown, cut = counts(message)
        assert shown <= 12
        total_cut += cut
        shown_lines += code_lines(message)
    assert len(shown_lines) + total_cut == len(emitted)  # every line is shown or counted in a "… N lines cut" note
    assert total_cut > 0
    assert shown_lines == [line for line in emitted if line in shown_lines]  # in order, and only real lines
    assert emitted[-1] in shown_lines


async def test_at_most_one_excerpt_message_per_interval(slack: FakeSlack, client: AsyncWebClient) -> None:
    thread = new_thread(client, interval=30.0, max_lines=200)
    await thread.start("parent")
    for burst in range(5):
        await thread.emit(LogExcerpt(lines=[f"burst {burst} line {i}" for i in range(20)], omitted=1))
        await asyncio.sleep(0.02)
    # The first burst goes out at once; the others wait for the interval (30 s), which flush() cuts short.
    await slack.wait_for(lambda: len(excerpt_messages(slack, thread.thread_ts)) >= 1)
    assert len(excerpt_messages(slack, thread.thread_ts)) == 1
    await thread.flush()
    messages = excerpt_messages(slack, thread.thread_ts)
    assert len(messages) == 2
    assert [counts(m) for m in messages] == [(20, 1), (80, 4)]


async def test_rate_limited_update_is_retried_by_the_retry_handler(slack: FakeSlack, client: AsyncWebClient) -> None:
    thread = new_thread(client)
    await thread.start("parent")
    slack.rate_limit("chat.update", times=1, retry_after=0)
    await thread.emit(Parsed(request=request()))
    attempts = slack.calls("chat.update")
    assert [c.status for c in attempts] == [429, 200]
    assert attempts[0].args == attempts[1].args
    assert thread.delivery_errors == []
    assert "start Qwen3-8B on CT129" in block_text(slack.message(CHANNEL, thread.status_ts).blocks)


async def test_a_refused_message_is_logged_and_the_deployment_goes_on(slack: FakeSlack, client: AsyncWebClient) -> None:
    thread = new_thread(client)
    await thread.start("parent")
    slack.fail("chat.postMessage", "msg_too_long")
    await thread.emit(Info(message="loading weights"))  # its reply is refused
    await thread.emit(Info(message="still loading"))
    assert len(thread.delivery_errors) == 1 and "msg_too_long" in thread.delivery_errors[0]
    assert [m.text for m in slack.replies(CHANNEL, thread.thread_ts)][-1] == "ℹ️ still loading"


async def test_a_deleted_status_message_is_posted_again(slack: FakeSlack, client: AsyncWebClient) -> None:
    thread = new_thread(client)
    await thread.start("parent")
    first = thread.status_ts
    slack.fail("chat.update", "message_not_found")
    await thread.emit(Parsed(request=request()))
    assert thread.status_ts != first
    assert "start Qwen3-8B on CT129" in block_text(slack.message(CHANNEL, thread.status_ts).blocks)
    assert thread.delivery_errors == []


async def test_secrets_never_reach_slack(slack: FakeSlack, client: AsyncWebClient) -> None:
    thread = new_thread(client, interval=0.0)
    await thread.start(parent_text("U0ALICE", f"Qwen3-8B on CT129 token {HF_TOKEN}"))
    await thread.emit(Parsed(request=request()))
    # A line long enough to be shortened: the cut must not leave a piece of the token behind.
    await thread.emit(LogExcerpt(lines=[f"HF_TOKEN={HF_TOKEN}", "x" * 379 + " " + HF_TOKEN, f"Authorization: Bearer {HF_TOKEN}"]))
    await thread.emit(Failed(message=f"download failed with {HF_TOKEN}", step="launch"))
    await thread.emit(Crashed(exit_code=1, tail=[f"using token {HF_TOKEN}"]))
    await thread.emit(Diagnosed(diagnosis=Diagnosis(
        category="auth", cause="gated model",
        evidence=[EvidenceLine(line=3, text=f"401 for token={HF_TOKEN}")])))
    await thread.flush()
    # What a caller renders itself is redacted at the door too.
    await thread.post(f"raw {HF_TOKEN}", excerpt_blocks([f"raw {HF_TOKEN}"], omitted=0))
    sent = json.dumps([c.args for c in slack.calls()])
    assert HF_TOKEN not in sent
    assert HF_TOKEN[:6] not in sent  # not even a prefix of it, after a line was shortened
    assert "[REDACTED]" in sent


async def test_crash_diagnosis_carries_the_approval_buttons(slack: FakeSlack, client: AsyncWebClient) -> None:
    view = ApprovalView(approval_id="apv-1", title="Relaunch with --mem-fraction-static 0.82",
                        why=["CUDA out of memory at startup"],
                        argv_diff=["- --mem-fraction-static 0.9", "+ --mem-fraction-static 0.82"],
                        requested_by="U0ALICE", expires_at=datetime(2026, 3, 1, 14, 32, tzinfo=timezone.utc))
    asked: list[Diagnosis] = []

    async def approval_for(diagnosis: Diagnosis) -> ApprovalView | None:
        asked.append(diagnosis)
        return view if diagnosis.fix else None

    thread = new_thread(client, approval_for=approval_for)
    await thread.start("parent")
    await thread.emit(Launched(deployment_id="d1", handle=ProcessHandle(pid=9, log_path="/l")))
    await thread.emit(Crashed(exit_code=1, tail=["torch.OutOfMemoryError: CUDA out of memory"]))
    diagnosis = Diagnosis(category="cuda_oom", cause="Out of GPU memory",
                          evidence=[EvidenceLine(line=1, text="torch.OutOfMemoryError: CUDA out of memory")],
                          fix=Fix(summary="lower the memory fraction", overrides=PlanOverrides(mem_fraction=0.82)))
    await thread.emit(Diagnosed(diagnosis=diagnosis))
    await thread.flush()

    assert asked == [diagnosis]
    replies = slack.replies(CHANNEL, thread.thread_ts)
    assert len(replies) == 2  # the status message and the diagnosis: the crash tail is not repeated
    text = block_text(replies[-1].blocks)
    assert "Out of GPU memory" in text and APPROVE_ACTION_ID in text and '"value": "apv-1"' in text
    assert "the server stopped (exit code 1)" in block_text(slack.message(CHANNEL, thread.status_ts).blocks)

    decided = view.model_copy(update={"state": "approved", "decided_by": "U0BOB",
                                      "decided_at": datetime(2026, 3, 1, 14, 2, tzinfo=timezone.utc)})
    approval_ts = await thread.post_approval(view)
    await thread.update_approval(approval_ts, decided)
    updated = slack.message(CHANNEL, approval_ts)
    assert "Approved by <@U0BOB> at 14:02 UTC" in block_text(updated.blocks)
    assert APPROVE_ACTION_ID not in block_text(updated.blocks)


async def test_a_crash_without_diagnosis_shows_its_last_lines_on_flush(slack: FakeSlack, client: AsyncWebClient) -> None:
    thread = new_thread(client, max_lines=3)
    await thread.start("parent")
    await thread.emit(Crashed(exit_code=137, tail=[f"tail {i}" for i in range(5)]))
    await thread.flush()
    last = slack.replies(CHANNEL, thread.thread_ts)[-1]
    assert last.text == "last lines before the crash"
    assert code_lines(last) == ["tail 2", "tail 3", "tail 4"] and counts(last) == (3, 2)


async def test_resuming_a_thread_updates_the_known_status_message(slack: FakeSlack, client: AsyncWebClient) -> None:
    first = new_thread(client)
    await first.start("parent")
    await first.emit(Parsed(request=request()))
    resumed = new_thread(client, thread_ts=first.thread_ts, status_ts=first.status_ts, board=first.board)
    await resumed.start("ignored: the parent exists")
    await resumed.emit(Probed(facts=facts(), seconds=1.0))
    assert len([c for c in slack.ok_calls("chat.postMessage") if "thread_ts" not in c.args]) == 1
    assert "CT129 (ct129)" in block_text(slack.message(CHANNEL, first.status_ts).blocks)


async def test_emit_before_start_is_a_bug(client: AsyncWebClient) -> None:
    with pytest.raises(RuntimeError, match="start"):
        await new_thread(client).emit(Info(message="x"))


# --------------------------------------------------------------------------------------------- the client


def test_make_web_client_needs_a_token_and_a_sane_url() -> None:
    with pytest.raises(SlackSetupError, match="SLACK_BOT_TOKEN"):
        make_web_client(Secrets(slack_bot_token=None))
    with pytest.raises(SlackSetupError, match="SLACK_API_URL"):
        make_web_client(Secrets(slack_bot_token="xoxb-1", slack_api_url="127.0.0.1:8999/api"))
    default = make_web_client(Secrets(slack_bot_token="xoxb-1", slack_api_url=None))
    assert default.base_url == "https://slack.com/api/"
    handlers = {type(h).__name__ for h in default.retry_handlers}
    assert handlers == {"AsyncConnectionErrorRetryHandler", "AsyncRateLimitErrorRetryHandler",
                        "AsyncServerErrorRetryHandler"}


# --------------------------------------------------------------------------------------------- FakeSlack itself


async def test_fakeslack_checks_the_token_and_answers_like_slack(slack: FakeSlack, client: AsyncWebClient) -> None:
    intruder = AsyncWebClient(token="xoxb-wrong", base_url=slack.base_url)
    with pytest.raises(SlackApiError) as refused:
        await intruder.chat_postMessage(channel=CHANNEL, text="hi")
    assert refused.value.response["error"] == "invalid_auth"
    with pytest.raises(SlackApiError) as missing:
        await client.chat_update(channel=CHANNEL, ts="1.000000", text="x")
    assert missing.value.response["error"] == "message_not_found"
    first = await client.chat_postMessage(channel=CHANNEL, text="one")
    second = await client.chat_postMessage(channel=CHANNEL, text="two", thread_ts=first["ts"])
    assert float(second["ts"]) > float(first["ts"]) and second["message"]["thread_ts"] == first["ts"]
    assert (await client.auth_test())["user_id"]
    link = await client.chat_getPermalink(channel=CHANNEL, message_ts=first["ts"])
    assert link["permalink"].endswith(first["ts"].replace(".", ""))
    published = await client.views_publish(user_id="U0ALICE", view=home_view([]))
    assert published["view"]["type"] == "home"


async def test_fakeslack_accepts_form_bodies_and_records_response_urls(slack: FakeSlack) -> None:
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "hello"}}]
    url = slack.response_url()
    async with aiohttp.ClientSession() as session:
        form = {"token": slack.token, "channel": CHANNEL, "text": "t", "blocks": json.dumps(blocks)}
        async with session.post(slack.base_url + "chat.postMessage", data=form) as response:
            assert (await response.json())["ok"] is True
        async with session.post(url, json={"response_type": "ephemeral", "text": "only you"}) as response:
            assert response.status == 200
    assert slack.calls("chat.postMessage")[-1].args["blocks"] == blocks  # decoded, as assertions want them
    assert slack.responses(url) == [{"response_type": "ephemeral", "text": "only you"}]


# --------------------------------------------------------------------------------------------- signed requests


def test_signed_requests_verify_with_slack_sdk_and_tampering_does_not() -> None:
    verifier = SignatureVerifier(SIGNING_SECRET)
    requests = [
        slack_signing.slash_command(SIGNING_SECRET, text="Qwen3-8B on CT129"),
        slack_signing.thread_message(SIGNING_SECRET, text="stop it", thread_ts="1700000000.000100"),
        slack_signing.block_action(SIGNING_SECRET, action_id=APPROVE_ACTION_ID, value="apv-1"),
        slack_signing.app_home_opened(SIGNING_SECRET),
    ]
    for req in requests:
        assert verifier.is_valid_request(req.body, req.headers)
        assert not verifier.is_valid_request(slack_signing.with_bad_signature(req).body,
                                             slack_signing.with_bad_signature(req).headers)
        stale = slack_signing.with_old_timestamp(req, SIGNING_SECRET)
        assert not verifier.is_valid_request(stale.body, stale.headers)


async def test_signed_requests_reach_bolt_handlers(slack: FakeSlack, client: AsyncWebClient) -> None:
    app = AsyncApp(client=client, signing_secret=SIGNING_SECRET, process_before_response=True)
    got: dict[str, object] = {}

    @app.command("/deploy")
    async def deploy(ack, command) -> None:  # noqa: ANN001 (Bolt's injected arguments)
        await ack()
        got["command"] = (command["text"], command["user_id"], command["response_url"])

    @app.action(APPROVE_ACTION_ID)
    async def approve(ack, body, action) -> None:  # noqa: ANN001
        await ack()
        got["action"] = (action["value"], body["user"]["id"], body["container"]["message_ts"])

    @app.event("message")
    async def message(event) -> None:  # noqa: ANN001
        got["message"] = (event["text"], event["thread_ts"])

    async def dispatch(req: slack_signing.SignedRequest) -> int:
        response = await app.async_dispatch(AsyncBoltRequest(body=req.text, headers=req.headers))
        return response.status

    url = slack.response_url()
    command = slack_signing.slash_command(SIGNING_SECRET, text="Qwen3-8B on CT129 & <!channel>", response_url=url)
    assert await dispatch(command) == 200
    assert got["command"] == ("Qwen3-8B on CT129 & <!channel>", "U0ALICE", url)
    assert await dispatch(slack_signing.block_action(SIGNING_SECRET, action_id=APPROVE_ACTION_ID, value="apv-1",
                                                     user_id="U0BOB", message_ts="1700000000.000300")) == 200
    assert got["action"] == ("apv-1", "U0BOB", "1700000000.000300")
    assert await dispatch(slack_signing.thread_message(SIGNING_SECRET, text="status?",
                                                       thread_ts="1700000000.000100")) == 200
    assert got["message"] == ("status?", "1700000000.000100")

    got.clear()
    assert await dispatch(slack_signing.with_bad_signature(command)) == 401
    assert await dispatch(slack_signing.with_old_timestamp(command, SIGNING_SECRET)) == 401
    assert got == {}
    assert re.match(r"^v0=[0-9a-f]{64}$", command.signature)
