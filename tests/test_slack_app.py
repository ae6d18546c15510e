"""The Slack app end to end: the real Bolt app served over real HTTP (127.0.0.1, a free port) by `SlackService`,
correctly signed requests (tests/slack_signing.py), the bot's Web API calls going to FakeSlack, and the REAL
pipeline driving a simulated GPU host (local transport) whose engines start, log, answer /health and crash.

Nothing here asserts a time: the ack latency is measured and printed; waits have timeouts only against hangs.
The harness below is shared with tests/test_slack_faults.py.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import signal
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.config import AppConfig, Secrets, parse_config
import bot.mentions as bot_mentions
from bot.mentions import mention, mention_channel
from bot.models import Deployment
from bot.simhost import SimHost, build_sim_host
from bot.store import Store
from handlers.slack.app import EVENTS_PATH
from handlers.slack.blocks.approval import APPROVE_ACTION_ID, DENY_ACTION_ID
from handlers.slack.blocks.mrkdwn import escape_keeping_mentions
from handlers.slack.commands import parse_thread_command
from handlers.slack.serve import SlackService, serve
from tests import slack_signing
from tests.fakeslack import BOT_ID, BOT_USER_ID, FakeSlack, Message
from tests.ports import port_range
from tests.procs import pid_alive

SIGNING_SECRET = "3f1c0ffee5ecret0f7e5t5a1e5ab1e00"
HOST = "sim"
MODEL = "Qwen3-8B"
CHANNEL = "C0DEPLOY"
REQUESTER = "U0ALICE"
APPROVER = "U0BOB"
BYSTANDER = "U0CAROL"
#: Long enough for a hang to fail the test, never a bound on speed.
WAIT_S = 45.0


# --------------------------------------------------------------------------------------------- the harness


@dataclass
class Answer:
    status: int
    body: str
    seconds: float  # request sent -> response read (the ack latency, for slash commands)
    at: float  # time.monotonic() when the response was read (FakeSlack's Call.at uses the same clock)

    def json(self) -> dict[str, Any]:
        return json.loads(self.body) if self.body else {}


@dataclass
class Harness:
    slack: FakeSlack
    sim: SimHost
    store: Store
    config: AppConfig
    service: SlackService
    session: aiohttp.ClientSession

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.service.port}{EVENTS_PATH}"

    async def send(self, request: slack_signing.SignedRequest, *, retry: int | None = None,
                   url: str | None = None) -> Answer:
        headers = dict(request.headers)
        if retry is not None:
            headers |= {"x-slack-retry-num": str(retry), "x-slack-retry-reason": "http_timeout"}
        started = time.perf_counter()
        async with self.session.post(url or self.url, data=request.body, headers=headers) as response:
            body = await response.text()
        return Answer(response.status, body, time.perf_counter() - started, time.monotonic())

    def command(self, text: str, *, user: str = REQUESTER, channel: str = CHANNEL,
                trigger_id: str | None = None, response_url: str | None = None) -> slack_signing.SignedRequest:
        return slack_signing.slash_command(SIGNING_SECRET, text=text, user_id=user, channel_id=channel,
                                           trigger_id=trigger_id, response_url=response_url or self.slack.response_url())

    async def deploy(self, text: str, **options: Any) -> Answer:
        return await self.send(self.command(text, **options))

    async def reply(self, text: str, thread_ts: str, *, user: str = REQUESTER) -> Answer:
        return await self.send(slack_signing.thread_message(SIGNING_SECRET, text=text, thread_ts=thread_ts, user=user,
                                                            channel=CHANNEL))

    def click_request(self, approval_id: str, message: Message, *, user: str, approve: bool = True,
                      response_url: str | None = None) -> slack_signing.SignedRequest:
        return slack_signing.block_action(
            SIGNING_SECRET, action_id=APPROVE_ACTION_ID if approve else DENY_ACTION_ID, value=approval_id,
            user_id=user, channel_id=message.channel, message_ts=message.ts, thread_ts=message.thread_ts,
            block_id=f"deploybot_approval:{approval_id}", response_url=response_url or self.slack.response_url())

    # ----------------------------------------------------------------------------------------- what happened

    def deployments(self) -> list[Deployment]:
        return self.store.deployments_sync()

    def launches(self) -> list[dict[str, Any]]:
        return [r for r in self.store.audit_rows_sync() if r["action"] == "launch" and r["result"] == "launched"]

    def parents(self) -> list[Message]:
        return [m for m in self.slack.messages(CHANNEL) if m.thread_ts is None]

    def replies(self, thread_ts: str) -> list[Message]:
        return self.slack.replies(CHANNEL, thread_ts)

    def texts(self, thread_ts: str) -> list[str]:
        return [m.text or "" for m in self.replies(thread_ts)]

    async def wait(self, predicate: Callable[[], bool], what: str) -> None:
        try:
            await self.slack.wait_for(predicate, timeout=WAIT_S)
        except asyncio.TimeoutError:
            calls = [(c.method, (c.args.get("text") or "")[:120]) for c in self.slack.calls()]
            raise AssertionError(f"never happened: {what}; Slack calls so far: {calls}") from None

    async def wait_reply(self, thread_ts: str, prefix: str) -> Message:
        await self.wait(lambda: any((m.text or "").startswith(prefix) for m in self.replies(thread_ts)),
                        f"a reply starting {prefix!r}")
        return next(m for m in self.replies(thread_ts) if (m.text or "").startswith(prefix))

    async def deployed(self, text: str = f"start {MODEL} on {HOST}", **options: Any) -> tuple[Answer, str]:
        """/deploy, then wait until the thread says ready; returns the ack and the thread's ts."""
        answer = await self.deploy(text, **options)
        assert answer.status == 200, answer.body
        await self.wait(lambda: bool(self.parents()), "the parent message")
        thread_ts = self.parents()[-1].ts
        await self.wait_ready(thread_ts)
        return answer, thread_ts

    async def wait_ready(self, thread_ts: str) -> None:
        """Until the thread says ready, or fails (then the test fails at once, with what the thread said)."""
        ends = ("✅ ready at", "Plan rejected", "❌", "Diagnosis:", "last lines before the crash")
        await self.wait(lambda: any(t.startswith(ends) for t in self.texts(thread_ts)), "ready (or a failure)")
        assert any(t.startswith("✅ ready at") for t in self.texts(thread_ts)), self.texts(thread_ts)

    async def close(self) -> None:
        await self.stop_serving()
        await settle()
        await self.release()

    async def stop_serving(self) -> None:
        # The bot stops following (a cancelled stream ends when its server does), and the servers are stopped.
        stopping = asyncio.create_task(self.service.stop())
        await asyncio.sleep(0)
        await asyncio.to_thread(stop_servers, self.sim, self.deployments())
        await stopping

    async def release(self) -> None:
        await self.session.close()
        await self.slack.stop()
        self.store.close()


async def settle(rounds: int = 50) -> None:
    """Let streams the pipeline dropped finish closing (their log agents end with their servers) while the loop
    still runs, so that nothing is torn down after the test's loop is closed."""
    gc.collect()
    for _ in range(rounds):
        if not [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]:
            return
        await asyncio.sleep(0.1)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def process_gone(pid: int) -> bool:
    return not pid_alive(pid)


def port_closed(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


def stop_servers(sim: SimHost, deployments: list[Deployment]) -> None:
    """The finalizer: every engine the test started is ended, by process group (launch records) and by pid."""
    groups = set()
    for record in sim.log_dir.glob("*.launch.json"):
        try:
            groups.add(int(json.loads(record.read_text())["pgid"]))
        except (ValueError, KeyError, TypeError):
            continue
    pids = {d.handle.pid for d in deployments if d.handle}
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for group in groups:
            try:
                os.killpg(group, sig)
            except (ProcessLookupError, PermissionError):
                pass
        for pid in pids:
            if not process_gone(pid):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not all(process_gone(p) for p in pids):
            time.sleep(0.05)
        if all(process_gone(p) for p in pids):
            break


def make_config(sim: SimHost, *, policy: dict[str, Any] | None = None, host: dict[str, Any] | None = None) -> AppConfig:
    # Servers listen on real ports of this machine: a range of this run's own (tests/ports.py) keeps clear of other
    # test runs and of the kernel's ephemeral ports (32768 and up), which client sockets take at random.
    return parse_config({
        "hosts": {HOST: {**sim.host_config(), **(host or {})}},
        "policy": {"approvers": [APPROVER], "min_margin_gib": 0.5, "stop_grace_s": 5,
                   "port_range": port_range(), **(policy or {})},
        "slack": {"excerpt_interval_s": 0.3, "excerpt_max_lines": 6},
    }, "test config")


async def start_harness(root: Path, *, scenario: str = "healthy", policy: dict[str, Any] | None = None,
                        host: dict[str, Any] | None = None, store: Store | None = None,
                        sim: SimHost | None = None, slack: FakeSlack | None = None) -> Harness:
    root.mkdir(parents=True, exist_ok=True)
    sim = sim or build_sim_host(root / "host", gpus="2xA6000", models=[MODEL, "Llama-3.1-8B-Instruct"],
                                scenario=scenario, ready_after_s=0.3)
    if slack is None:
        slack = FakeSlack(users={u: {"name": u.lower()} for u in (REQUESTER, APPROVER, BYSTANDER)})
        await slack.start()
    store = store or Store(root / "deploybot.sqlite3")
    config = make_config(sim, policy=policy, host=host)
    secrets = Secrets(slack_bot_token=slack.token, slack_signing_secret=SIGNING_SECRET, slack_api_url=slack.base_url,
                      slack_app_token=None)
    service = SlackService(config, store, secrets, port=0, host="127.0.0.1")
    await service.start()
    return Harness(slack, sim, store, config, service, aiohttp.ClientSession())


HarnessFactory = Callable[..., Awaitable[Harness]]


@pytest.fixture
async def make_bot(tmp_path: Path) -> AsyncIterator[HarnessFactory]:
    made: list[Harness] = []

    async def make(**options: Any) -> Harness:
        harness = await start_harness(tmp_path / f"bot{len(made)}", **options)
        made.append(harness)
        return harness

    yield make
    # Every harness stops serving before the loop settles once: settling after the first alone would wait out the
    # second's running tasks.
    for harness in made:
        await harness.stop_serving()
    await settle()
    for harness in made:
        await harness.release()


@pytest.fixture
async def bot(make_bot: HarnessFactory) -> Harness:
    return await make_bot()


def blocks_text(message: Message | None) -> str:
    assert message is not None
    return json.dumps(message.blocks or [], ensure_ascii=False)


def status_message(bot: Harness, thread_ts: str) -> Message:
    """The first reply in the thread is its status message."""
    return bot.replies(thread_ts)[0]


# --------------------------------------------------------------------------------------------- /deploy


async def test_slash_command_acks_at_once_then_tells_the_story_in_one_thread(bot: Harness) -> None:
    answer, thread_ts = await bot.deployed(f"start {MODEL} on {HOST}")
    print(f"\n/deploy ack latency: {answer.seconds * 1000:.1f} ms (HTTP {answer.status})")
    assert answer.status == 200 and answer.body == ""  # an empty ack: the story is told in the channel

    parent = bot.parents()
    assert len(parent) == 1 and parent[0].text.startswith(f"<@{REQUESTER}> asked deploybot:")
    assert f"start {MODEL} on {HOST}" in parent[0].text

    status = status_message(bot, thread_ts)
    updates = bot.slack.ok_calls("chat.update")
    assert updates and {c.args["ts"] for c in updates} == {status.ts}  # ONE status message, updated in place
    # The steps complete in order, each visible in some version of that one message.
    versions = [json.dumps(c.args["blocks"], ensure_ascii=False) for c in updates]

    def first(marker: str) -> int:
        return next(i for i, v in enumerate(versions) if marker in v)

    order = [first(f"✅ *{step}*") for step in ("parse", "probe", "plan", "launch", "ready")]
    assert order == sorted(order), order

    [dep] = bot.deployments()
    assert dep.state == "ready" and dep.handle.pid
    assert (dep.channel, dep.thread_ts, dep.status_ts) == (CHANNEL, thread_ts, status.ts)
    assert f"PID {dep.handle.pid}" in blocks_text(status)
    ready = next(t for t in bot.texts(thread_ts) if t.startswith("✅ ready at"))
    assert f"http://127.0.0.1:{dep.port}" in ready
    assert not process_gone(dep.handle.pid) and not port_closed(dep.port)

    # The ack came back before the pipeline got as far as the launch: the work runs after the ack.
    launched = next(c for c in updates if f"PID {dep.handle.pid}" in json.dumps(c.args["blocks"]))
    assert answer.at < launched.at
    assert [r["detail"].startswith(f"PID {dep.handle.pid}:") for r in bot.launches()] == [True]


async def test_help_and_parse_errors_answer_ephemerally_and_change_nothing(bot: Harness) -> None:
    helped = await bot.deploy("help")
    assert helped.status == 200
    body = helped.json()
    assert body["response_type"] == "ephemeral" and HOST in body["text"] and MODEL in body["text"]
    assert body["blocks"]

    # A name not in the inventory: acked at once, the host probed once after the ack, then the answer (still not
    # there) comes ephemerally through the response URL.
    url = bot.slack.response_url()
    wrong = await bot.deploy(f"start Qwen9-999B on {HOST}", response_url=url)
    assert wrong.status == 200
    await bot.wait(lambda: bool(bot.slack.responses(url)), "the parse error through the response URL")
    [body] = bot.slack.responses(url)
    assert body["response_type"] == "ephemeral" and body["text"].startswith("❓")

    unsafe = await bot.deploy(f"start {MODEL} on {HOST}; rm -rf /")
    assert unsafe.json()["response_type"] == "ephemeral"

    await asyncio.sleep(0.3)  # let anything wrongly spawned show itself; nothing is asserted about time
    assert bot.slack.calls("chat.postMessage") == [] and bot.deployments() == []
    refused = [r for r in bot.store.audit_rows_sync() if r["action"] == "parse"]
    assert len(refused) == 2 and all(r["result"] == "refused" and r["actor"] == REQUESTER for r in refused)


async def test_a_user_or_channel_not_allowed_on_the_host_is_refused_and_audited(make_bot: HarnessFactory) -> None:
    bot = await make_bot(host={"allowed_users": [APPROVER], "allowed_channels": ["C0GPUOPS"]})
    refused = await bot.deploy(f"start {MODEL} on {HOST}", user=REQUESTER, channel="C0GPUOPS")
    assert refused.json()["response_type"] == "ephemeral"
    assert "not allowed to use sim" in refused.json()["text"]
    wrong_channel = await bot.deploy(f"start {MODEL} on {HOST}", user=APPROVER, channel=CHANNEL)
    assert "takes requests only in" in wrong_channel.json()["text"]
    no_host = await bot.deploy(f"start {MODEL}", user=REQUESTER, channel="C0GPUOPS")
    assert "not allowed" in no_host.json()["text"]

    await asyncio.sleep(0.3)
    assert bot.slack.calls("chat.postMessage") == [] and bot.deployments() == [] and bot.launches() == []
    audit = [r for r in bot.store.audit_rows_sync() if r["result"] == "refused"]
    assert [(r["actor"], r["action"]) for r in audit] == [(REQUESTER, "start"), (APPROVER, "start"),
                                                           (REQUESTER, "start")]


# --------------------------------------------------------------------------------------------- thread replies


def test_only_the_bots_own_mentions_survive_escaping() -> None:
    """The pipeline's mentions (bot.mentions) become mentions; a host's `<@U…>` or `<!channel>` shows literally."""
    text = (f"started by {mention('U0ALICE')} in {mention_channel('C0DEPLOY')}; the log said <@U0ALICE> <!channel> "
            "<@here> <https://evil|click> <#C0DEPLOY> a&b")
    assert escape_keeping_mentions(text) == (
        "started by <@U0ALICE> in <#C0DEPLOY>; the log said &lt;@U0ALICE&gt; &lt;!channel&gt; &lt;@here&gt; "
        "&lt;https://evil|click&gt; &lt;#C0DEPLOY&gt; a&amp;b")
    forged = "\x1f@U0ALICE.0123456789ab\x1f"  # a mark with another key: plain text, no mention
    assert escape_keeping_mentions(forged) == "@U0ALICE"


def test_thread_words_are_read_strictly() -> None:
    assert parse_thread_command("logs 5").lines == 5
    assert parse_thread_command("<@U0DEPLOYBOT> Stop!").name == "stop"
    assert parse_thread_command("logs 100000").lines == 200
    for chatter in ("stop 3", "please stop", "status of the other one", "", "logs five"):
        assert parse_thread_command(chatter) is None


async def test_thread_replies_status_logs_help_and_stop(bot: Harness) -> None:
    _, thread_ts = await bot.deployed()
    [dep] = bot.deployments()

    assert (await bot.reply("status", thread_ts)).status == 200
    status = await bot.wait_reply(thread_ts, "ℹ️ sim:")
    assert f"{MODEL} (ready, port {dep.port}, PID {dep.handle.pid})" in status.text

    await bot.reply("logs 5", thread_ts)
    logs = await bot.wait_reply(thread_ts, "logs: the last 5 lines")
    shown = next(b["text"]["text"] for b in logs.blocks if b["type"] == "section").strip("`\n").splitlines()
    log_lines = Path(dep.handle.log_path).read_text().splitlines()
    assert len(shown) == 5 and all(line in log_lines for line in shown)

    await bot.reply("help", thread_ts)
    helped = await bot.wait_reply(thread_ts, "In this thread I understand")
    assert "logs [N]" in helped.text and "restart" in helped.text

    # The bot's own message, another bot's, an edit, chatter: all ignored (no second stop, no reply).
    before = len(bot.replies(thread_ts))
    own = {"type": "message", "user": BOT_USER_ID, "bot_id": BOT_ID, "text": "stop", "ts": f"{time.time():.6f}",
           "thread_ts": thread_ts, "channel": CHANNEL}
    other_bot = {**own, "user": "U0OTHERBOT", "bot_id": "B0OTHER", "ts": f"{time.time() + 1:.6f}"}
    bot_subtype = {**own, "subtype": "bot_message", "user": None, "ts": f"{time.time() + 2:.6f}"}
    for event in (own, other_bot, bot_subtype):
        assert (await bot.send(slack_signing.event_callback(SIGNING_SECRET, event))).status == 200
    assert (await bot.reply("could you stop and check the logs please", thread_ts)).status == 200
    await asyncio.sleep(0.5)
    assert len(bot.replies(thread_ts)) == before
    assert bot.store.deployments_sync()[0].state == "ready" and not process_gone(dep.handle.pid)

    await bot.reply("stop", thread_ts)
    stopped = await bot.wait_reply(thread_ts, "⏹️")
    assert f"(PID {dep.handle.pid}) stopped cleanly; port {dep.port} closed" in stopped.text
    assert process_gone(dep.handle.pid) and port_closed(dep.port)
    assert bot.store.deployments_sync()[0].state == "stopped"
    # The deployment's own status message shows the stop too (its follower saw the server end on request).
    await bot.wait(lambda: "✅ *stop*" in blocks_text(status_message(bot, thread_ts)), "the stop on the board")
    assert not any("crash" in t.lower() for t in bot.texts(thread_ts))


async def test_restart_in_the_thread_relaunches_with_the_same_plan(bot: Harness) -> None:
    _, thread_ts = await bot.deployed()
    [first] = bot.deployments()
    await bot.reply("restart", thread_ts)
    await bot.wait(lambda: sum(t.startswith("✅ ready at") for t in bot.texts(thread_ts)) == 2, "the second ready")
    old, new = bot.deployments()
    assert old.id == first.id and old.state == "stopped" and process_gone(first.handle.pid)
    assert new.state == "ready" and new.thread_ts == thread_ts and new.plan.argv == first.plan.argv
    assert new.status_ts not in (None, first.status_ts)  # a new deployment, its own status message
    assert "✅ *stop*" in blocks_text(bot.slack.message(CHANNEL, new.status_ts))
    assert len(bot.launches()) == 2 and len(bot.parents()) == 1


async def test_thread_replies_obey_the_hosts_allowed_users(make_bot: HarnessFactory) -> None:
    bot = await make_bot(host={"allowed_users": [REQUESTER, APPROVER]})
    _, thread_ts = await bot.deployed()
    await bot.reply("stop", thread_ts, user=BYSTANDER)
    await bot.wait(lambda: bool(bot.slack.ok_calls("chat.postEphemeral")), "the refusal")
    [refusal] = bot.slack.ok_calls("chat.postEphemeral")
    assert refusal.args["user"] == BYSTANDER and refusal.args["thread_ts"] == thread_ts
    assert "not allowed to use sim" in refusal.args["text"]
    [dep] = bot.deployments()
    assert dep.state == "ready" and not process_gone(dep.handle.pid)
    assert [r["actor"] for r in bot.store.audit_rows_sync() if r["result"] == "refused"] == [BYSTANDER]


async def test_stopping_someone_elses_server_waits_for_an_approver(bot: Harness) -> None:
    _, thread_ts = await bot.deployed()
    [dep] = bot.deployments()
    await bot.reply("stop", thread_ts, user=BYSTANDER)
    await bot.wait(lambda: any(t.startswith("Approval needed: stop") for t in bot.texts(thread_ts)), "the approval")
    approval = next(m for m in bot.replies(thread_ts) if (m.text or "").startswith("Approval needed: stop"))
    assert f"was started by <@{REQUESTER}>" in blocks_text(approval)
    assert not process_gone(dep.handle.pid)
    approval_id = next(e["value"] for b in approval.blocks if b["type"] == "actions" for e in b["elements"])
    await bot.send(bot.click_request(approval_id, approval, user=APPROVER))
    await bot.wait_reply(thread_ts, "⏹️")
    assert process_gone(dep.handle.pid) and bot.store.get_deployment_sync(dep.id).state == "stopped"
    assert "Approved by" in blocks_text(bot.slack.message(CHANNEL, approval.ts))


async def test_an_approval_asked_before_a_restart_keeps_its_mentions_when_decided_after(
        bot: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """The approval message's reasons were saved with the marks of the process that asked; the process that
    decides (after a restart: a new mark key) still shows the owner as a mention, not as plain `@U…`."""
    _, thread_ts = await bot.deployed()
    await bot.reply("stop", thread_ts, user=BYSTANDER)
    await bot.wait(lambda: any(t.startswith("Approval needed: stop") for t in bot.texts(thread_ts)), "the approval")
    approval = next(m for m in bot.replies(thread_ts) if (m.text or "").startswith("Approval needed: stop"))
    approval_id = next(e["value"] for b in approval.blocks if b["type"] == "actions" for e in b["elements"])
    for _ in range(200):  # its ref is saved once chat.postMessage has returned, a moment after Slack shows it
        if await bot.service.surface.refs.approval(approval_id) is not None:
            break
        await asyncio.sleep(0.05)
    monkeypatch.setattr(bot_mentions, "_KEY", "feedfacecafe")  # what a restart of the bot changes here
    await bot.send(bot.click_request(approval_id, approval, user=APPROVER))
    await bot.wait_reply(thread_ts, "⏹️")
    await bot.wait(lambda: "Approved by" in blocks_text(bot.slack.message(CHANNEL, approval.ts)), "the decision")
    decided = blocks_text(bot.slack.message(CHANNEL, approval.ts))
    assert f"was started by <@{REQUESTER}>" in decided and f"started by @{REQUESTER}" not in decided


async def test_app_home_shows_the_host_and_running_deployments(bot: Harness) -> None:
    _, thread_ts = await bot.deployed()
    [dep] = bot.deployments()
    assert (await bot.send(slack_signing.app_home_opened(SIGNING_SECRET, user=APPROVER))).status == 200
    await bot.wait(lambda: bool(bot.slack.ok_calls("views.publish")), "views.publish")
    [published] = bot.slack.ok_calls("views.publish")
    assert published.args["user_id"] == APPROVER
    view = json.dumps(published.args["view"], ensure_ascii=False)
    assert HOST in view and "2 GPUs" in view and "NVIDIA RTX A6000" in view
    assert MODEL in view and f"PID {dep.handle.pid}" in view and f"http://127.0.0.1:{dep.port}" in view
    assert f"/archives/{CHANNEL}/p{thread_ts.replace('.', '')}" in view  # a link to the deployment's thread


# --------------------------------------------------------------------------------------------- a restart of the bot


async def test_serve_resumes_active_deployments_in_their_own_threads(tmp_path: Path, make_bot: HarnessFactory) -> None:
    first = await make_bot()
    _, thread_ts = await first.deployed()
    [dep] = first.deployments()
    status_ts = status_message(first, thread_ts).ts
    # The bot goes away; the server keeps running. (Its cancelled log stream ends when the server does: the old
    # bot's shutdown is awaited at the end.)
    gone = asyncio.create_task(first.service.stop())
    while first.service.port is not None:
        await asyncio.sleep(0.05)

    # `deploybot serve` again, on the same store: it follows the server again, in the same thread.
    port = free_port()
    shutdown = asyncio.Event()
    secrets = Secrets(slack_bot_token=first.slack.token, slack_signing_secret=SIGNING_SECRET,
                      slack_api_url=first.slack.base_url, slack_app_token=None)
    served = asyncio.create_task(serve(first.config, first.store, secrets, port=port, host="127.0.0.1",
                                       shutdown=shutdown))
    try:
        await first.wait_reply(thread_ts, "ℹ️ resumed following")
        url = f"http://127.0.0.1:{port}{EVENTS_PATH}"
        for attempt in range(100):  # the listener may come up a moment after the resume message
            try:
                answer = await first.send(slack_signing.thread_message(
                    SIGNING_SECRET, text="stop", thread_ts=thread_ts, user=REQUESTER, channel=CHANNEL), url=url)
                break
            except aiohttp.ClientConnectionError:
                await asyncio.sleep(0.1)
        assert answer.status == 200
        await first.wait_reply(thread_ts, "⏹️")
        assert process_gone(dep.handle.pid) and port_closed(dep.port)
        # Still ONE parent and the same status message: the restart did not start a new story.
        assert len(first.parents()) == 1
        assert first.store.get_deployment_sync(dep.id).status_ts == status_ts
        await first.wait(lambda: "✅ *stop*" in blocks_text(first.slack.message(CHANNEL, status_ts)),
                         "the resumed board shows the stop")
        assert "✅ *ready*" in blocks_text(first.slack.message(CHANNEL, status_ts))  # the board kept its history
    finally:
        shutdown.set()
        assert await asyncio.wait_for(served, WAIT_S) == 0
        await gone


async def test_serve_refuses_to_start_without_a_signing_secret(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sim = build_sim_host(tmp_path / "host", models=[MODEL])
    store = Store(tmp_path / "db.sqlite3")
    try:
        code = await serve(make_config(sim), store, Secrets(slack_bot_token="xoxb-1", slack_signing_secret=None),
                           port=free_port(), host="127.0.0.1")
    finally:
        store.close()
    assert code == 2 and "SLACK_SIGNING_SECRET" in capsys.readouterr().err


async def test_slacks_url_check_is_answered_with_its_challenge(bot: Harness) -> None:
    challenge = "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
    body = json.dumps({"type": "url_verification", "token": "t", "challenge": challenge}).encode()
    answer = await bot.send(slack_signing.sign(SIGNING_SECRET, body, slack_signing.JSON))
    assert answer.status == 200 and answer.json() == {"challenge": challenge}
