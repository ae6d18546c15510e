"""deploybot's own `GET /metrics`, scraped through the real serve app (same harness as tests/test_slack_app.py:
Bolt over real HTTP, signed requests, FakeSlack, the real pipeline on a simulated host), parsed with
prometheus_client's own text parser. Nothing asserts a time: only that counts and histograms move.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
from collections.abc import Callable
from pathlib import Path

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bot.config import HostConfig
from bot.metrics import BotMetrics
from bot.remote import HostUnreachable, RemotePool
from handlers.slack.metered import MetricsServer
from tests import slack_signing
from tests.test_slack_app import (  # noqa: F401 (fixtures)
    APPROVER,
    HOST,
    MODEL,
    SIGNING_SECRET,
    Harness,
    HarnessFactory,
    blocks_text,
    bot,
    make_bot,
)
from tests.test_slack_faults import CRASH, crashed_with_approval

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


async def scrape_url(session: aiohttp.ClientSession, url: str) -> Samples:
    async with session.get(url) as response:
        assert response.status == 200
        assert response.headers["content-type"].startswith("text/plain; version=")  # the text exposition format
        return parse(await response.text())


async def scrape(bot: Harness) -> Samples:
    return await scrape_url(bot.session, f"http://127.0.0.1:{bot.service.port}/metrics")


async def until(predicate: Callable[[], bool], what: str, timeout_s: float = 45.0) -> None:
    """Poll a condition that no Slack call announces (FakeSlack's wait_for wakes on calls only)."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"never happened: {what}")
        await asyncio.sleep(0.05)


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def total(samples: Samples, name: str) -> float:
    return sum(v for (n, _), v in samples.items() if n == name)


async def test_counters_and_histograms_move_with_a_deployment_and_its_crash(bot: Harness) -> None:
    before = await scrape(bot)
    # Every series a dashboard needs exists from the start, at 0.
    for outcome in ("ready", "crashed", "rejected", "failed"):
        assert ("deploybot_deployments_total", frozenset({("outcome", outcome)})) in before
    assert ("deploybot_automatic_relaunches_total", frozenset()) in before
    assert value(before, "deploybot_automatic_relaunches_total") == 0
    assert value(before, "deploybot_request_to_pid_seconds_count") == 0
    assert value(before, "deploybot_active_followers") == 0
    assert total(before, "deploybot_crashes_total") == 0

    _, thread_ts = await bot.deployed()
    [dep] = bot.deployments()
    ready = await scrape(bot)
    assert value(ready, "deploybot_deployments_total", outcome="ready") == 1
    assert value(ready, "deploybot_request_to_pid_seconds_count") == 1
    assert value(ready, "deploybot_request_to_pid_seconds_sum") > 0
    assert value(ready, "deploybot_request_to_pid_seconds_bucket", le="+Inf") == 1
    assert value(ready, "deploybot_ack_seconds_count") > value(before, "deploybot_ack_seconds_count")
    assert value(ready, "deploybot_active_followers") == 1  # serve keeps following a ready server
    assert value(ready, "deploybot_event_loop_lag_seconds_count", loop="slack") >= 0

    # The server dies under the bot: told in its thread as a crash, with a category.
    os.kill(dep.handle.pid, signal.SIGKILL)
    await bot.wait(lambda: any(t.startswith("Diagnosis:") for t in bot.texts(thread_ts)), "the crash diagnosis")
    await bot.wait(lambda: bot.store.get_deployment_sync(dep.id).state == "crashed", "the crash recorded")
    category = bot.store.get_deployment_sync(dep.id).diagnosis.category
    # (the follower ends once the crash is told, its fix offered)
    await until(lambda: not bot.service.pipeline.following, "the follower ended")
    crashed = await scrape(bot)
    assert value(crashed, "deploybot_crashes_total", category=category) == 1
    assert total(crashed, "deploybot_crashes_total") == 1
    # Its outcome was ready (counted once); it crashed later.
    assert value(crashed, "deploybot_deployments_total", outcome="ready") == 1
    assert value(crashed, "deploybot_deployments_total", outcome="crashed") == 0
    assert value(crashed, "deploybot_active_followers") == 0
    assert value(crashed, "deploybot_request_to_pid_seconds_count") == 1  # a crash launches nothing


async def test_a_crash_before_ready_and_a_denied_fix_are_counted(make_bot: HarnessFactory) -> None:
    bot = await make_bot(scenario=CRASH)
    before = await scrape(bot)
    thread_ts, approval, approval_id = await crashed_with_approval(bot)
    crashed = await scrape(bot)
    assert value(crashed, "deploybot_deployments_total", outcome="crashed") == 1
    assert value(crashed, "deploybot_deployments_total", outcome="ready") == 0
    assert value(crashed, "deploybot_crashes_total", category="cuda_graph_oom") == 1
    assert value(crashed, "deploybot_approvals_total", decision="denied") == 0

    await bot.send(bot.click_request(approval_id, approval, user=APPROVER, approve=False))
    await bot.wait(lambda: "Denied by" in blocks_text(bot.slack.message(approval.channel, approval.ts)), "the denial")
    denied = await scrape(bot)
    assert value(denied, "deploybot_approvals_total", decision="denied") == 1
    assert value(denied, "deploybot_approvals_total", decision="approved") == 0
    assert value(denied, "deploybot_ack_seconds_count") >= value(before, "deploybot_ack_seconds_count") + 2

    # `diagnose` asked for in the thread is no second crash.
    await bot.reply("diagnose", thread_ts)
    await bot.wait(lambda: sum(t.startswith("Diagnosis:") for t in bot.texts(thread_ts)) == 2, "diagnose")
    assert total(await scrape(bot), "deploybot_crashes_total") == 1


async def test_two_apps_keep_their_own_counts(make_bot: HarnessFactory) -> None:
    first = await make_bot()
    second = await make_bot()
    await first.deployed()
    assert value(await scrape(first), "deploybot_deployments_total", outcome="ready") == 1
    assert value(await scrape(second), "deploybot_deployments_total", outcome="ready") == 0


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # nothing listens there once the socket is closed


async def test_ssh_connect_failures_are_counted_by_host(tmp_path: Path) -> None:
    hosts = {"gone": HostConfig(address="127.0.0.1", port=closed_port(), models_dir=str(tmp_path),
                                known_hosts=str(tmp_path / "known_hosts"), connect_timeout_s=2)}
    pool = RemotePool(hosts)
    metrics = BotMetrics(ssh_failures=lambda: pool.connect_failures)
    server = MetricsServer(metrics, "127.0.0.1", 0)  # Socket Mode's own /metrics port
    await server.start()
    try:
        with pytest.raises(HostUnreachable):
            await pool.get("gone").run(["true"])
        async with aiohttp.ClientSession() as session:
            samples = await scrape_url(session, f"http://127.0.0.1:{server.port}/metrics")
    finally:
        await server.stop()
        await pool.close()
    assert value(samples, "deploybot_ssh_connect_failures_total", host="gone") == 4  # every attempt of the retry


# --------------------------------------------------------------------------------------------- the engines' figures


def set_traffic(bot: Harness, **traffic: float) -> None:
    """The simulated engines' load (read when an engine starts): requests running and waiting, tok/s."""
    scenario = json.loads(bot.sim.scenario_file.read_text())
    bot.sim.scenario_file.write_text(json.dumps({**scenario, "traffic": traffic}))


LIVE = re.compile(r"live: (?P<running>\d+) running, (?P<queued>\d+) queued, KV cache (?P<kv>\d+)%, "
                  r"(?P<tps>[\d.]+) tok/s")


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
async def test_status_in_the_thread_shows_the_engines_live_figures(bot: Harness, engine: str) -> None:
    set_traffic(bot, running=3, queued=2, tok_s=55.0)
    _, thread_ts = await bot.deployed(f"start {MODEL} on {HOST} with {engine}")
    [dep] = bot.deployments()
    assert dep.engine == engine
    if engine == "sglang":
        assert "--enable-metrics" in dep.plan.argv  # SGLang serves /metrics only with it

    await bot.reply("status", thread_ts)
    status = await bot.wait_reply(thread_ts, "ℹ️ sim:")
    match = LIVE.search(status.text)
    assert match, status.text
    assert (match["running"], match["queued"]) == ("3", "2")
    assert 0 < int(match["kv"]) < 100
    assert 40 <= float(match["tps"]) <= 70  # 55 tok/s, give or take the simulated noise
    assert "⚠️" not in status.text

    # App Home shows them too.
    assert (await bot.send(slack_signing.app_home_opened(SIGNING_SECRET, user=APPROVER))).status == 200
    await bot.wait(lambda: bool(bot.slack.ok_calls("views.publish")), "views.publish")
    view = json.dumps(bot.slack.ok_calls("views.publish")[0].args["view"], ensure_ascii=False)
    assert "📈 live: 3 running, 2 queued, KV cache" in view and "tok/s" in view


async def test_a_stalled_engine_is_flagged_by_status(bot: Harness) -> None:
    set_traffic(bot, running=2, queued=1, tok_s=50.0, stall_after_s=0.0)
    _, thread_ts = await bot.deployed()
    await bot.reply("status", thread_ts)
    status = await bot.wait_reply(thread_ts, "ℹ️ sim:")
    assert "0.0 tok/s" in status.text and "⚠️" in status.text, status.text
    assert "wait and the engine generates nothing" in status.text


async def test_the_follower_shows_live_figures_and_flags_a_stall_once(make_bot: HarnessFactory) -> None:
    bot = await make_bot(policy={"engine_watch_interval_s": 0.2})
    # Healthy for 8 s after ready, then stalled: the first reads (every 0.2 s) come well inside that window even on
    # a loaded machine (with 2.5 s, a busy 2-core box once read the engine first after the stall began).
    set_traffic(bot, running=2, queued=0, tok_s=45.0, stall_after_s=8.0)
    _, thread_ts = await bot.deployed()
    board = lambda: blocks_text(bot.replies(thread_ts)[0])  # noqa: E731 - the living status message
    await bot.wait(lambda: "📈 live: 2 running, 0 queued" in board(), "the live figures on the status message")
    assert "⚠️" not in board()

    # The engine stops generating while requests pile up: flagged in the thread, once.
    flagged = lambda: [t for t in bot.texts(thread_ts) if t.startswith("ℹ️ ⚠️")]  # noqa: E731
    await bot.wait(lambda: bool(flagged()), "the stall flagged in the thread")
    assert "wait and the engine generates nothing" in flagged()[0]
    await bot.wait(lambda: "⚠️" in board(), "the stall on the status message")
    updates = len(bot.slack.ok_calls("chat.update"))
    await bot.wait(lambda: len(bot.slack.ok_calls("chat.update")) >= updates + 2, "two more reads")
    assert len(flagged()) == 1
