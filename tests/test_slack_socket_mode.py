"""Socket Mode (SLACK_APP_TOKEN set): the same app, reached over a WebSocket the bot dials out to.

The local Slack server answers apps.connections.open with a ws:// link and delivers envelopes over it, as Slack
does; the bot must ack each envelope on the socket and then tell the deployment's story through the Web API.
"""

from __future__ import annotations

import asyncio

import aiohttp

from bot.config import Secrets
from bot.store import Store
from handlers.slack.serve import SlackService
from tests.fakeslack import FakeSlack
from tests.test_slack_app import CHANNEL, HOST, MODEL, REQUESTER, make_config, process_gone, stop_servers
from bot.simhost import build_sim_host
from tests.test_metrics import scrape_url, value


async def test_socket_mode_acks_the_envelope_and_deploys_in_a_thread(tmp_path):
    sim = build_sim_host(tmp_path / "host", gpus="2xA6000", models=[MODEL], ready_after_s=0.3)
    store = Store(tmp_path / "state.db")
    async with FakeSlack(users={REQUESTER: {"name": "alice"}}) as slack:
        # No signing secret: Socket Mode needs none (Slack authenticated the link with the app token).
        secrets = Secrets(slack_bot_token=slack.token, slack_app_token=slack.app_token, slack_api_url=slack.base_url,
                          slack_signing_secret=None)
        service = SlackService(make_config(sim), store, secrets, port=0, host="127.0.0.1", metrics_port=0)
        assert service.socket_mode
        await service.start()
        try:
            assert slack.socket_connections == 1 and service.port is None  # dialled out; nothing listens
            ack = await slack.socket_send("slash_commands", {
                "command": "/deploy", "text": f"start {MODEL} on {HOST}", "user_id": REQUESTER,
                "channel_id": CHANNEL, "team_id": "T0TEAM", "trigger_id": "trig-socket-1",
                "response_url": slack.response_url()})
            assert ack["envelope_id"].startswith("env-")
            await slack.wait_for(lambda: any(m.text.startswith("✅ ready at") for m in slack.messages(CHANNEL)), 60)
            (dep,) = await store.active_deployments(HOST)
            assert dep.state == "ready" and dep.channel == CHANNEL and dep.thread_ts
            # No serve port, but GET /metrics on --metrics-port: the envelope's ack timed, the deployment counted.
            assert service.metrics_server is not None and service.metrics_server.port
            async with aiohttp.ClientSession() as session:
                metrics = await scrape_url(session, f"http://127.0.0.1:{service.metrics_server.port}/metrics")
            assert value(metrics, "deploybot_ack_seconds_count") >= 1
            assert value(metrics, "deploybot_deployments_total", outcome="ready") == 1
            assert value(metrics, "deploybot_request_to_pid_seconds_count") == 1
            parents = [m for m in slack.messages(CHANNEL) if m.thread_ts in (None, m.ts)]
            assert len(parents) == 1 and f"start {MODEL} on {HOST}" in parents[0].text
            # A thread reply arrives as an events_api envelope over the same socket.
            await slack.socket_send("events_api", {
                "type": "event_callback", "event_id": "Ev-socket-1", "team_id": "T0TEAM",
                "event": {"type": "message", "user": REQUESTER, "text": "stop", "channel": CHANNEL,
                          "ts": "1800000000.000001", "thread_ts": dep.thread_ts, "channel_type": "channel"}})
            await slack.wait_for(lambda: any("stopped" in m.text for m in slack.messages(CHANNEL)), 60)
            for _ in range(100):
                if process_gone(dep.handle.pid):
                    break
                await asyncio.sleep(0.1)
            assert process_gone(dep.handle.pid)
        finally:
            await service.stop()
            await asyncio.to_thread(stop_servers, sim, await store.deployments(host=HOST))
            store.close()
