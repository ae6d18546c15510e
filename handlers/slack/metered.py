"""The Slack side of deploybot's metrics (bot/metrics.py): `GET /metrics`, the ack timing, the story threads.

HTTP mode serves `/metrics` on the serve port beside `/slack/events`; Socket Mode has no port of its own, so
`MetricsServer` serves it on `--metrics-port`. The ack is timed around Bolt's own dispatch: the aiohttp handler
of `/slack/events` returns when the listener has called `ack()` (process_before_response=False), and in Socket
Mode `handle()` returns once the ack went back over the WebSocket.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

from bot.events import Event
from bot.metrics import BotMetrics, StoryMetrics
from handlers.slack.ackgate import AckGate
from handlers.slack.thread import SlackThread

METRICS_PATH = "/metrics"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class MeteredSlackThread(SlackThread):
    """A SlackThread whose events are counted on their way out (outcome, crash category, approvals, PID time)."""

    def __init__(self, *args: Any, story: StoryMetrics, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.story = story

    async def emit(self, event: Event) -> None:
        self.story.see(event)
        await super().emit(event)


def metrics_route(metrics: BotMetrics) -> Handler:
    async def handle(request: web.Request) -> web.Response:
        # CONTENT_TYPE_LATEST carries its charset; aiohttp wants it in the header, not as content_type.
        return web.Response(body=metrics.exposition(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    return handle


def ack_timer(metrics: BotMetrics, path: str,
              gate: AckGate | None = None) -> Callable[..., Awaitable[web.StreamResponse]]:
    """aiohttp middleware: the time from a Slack request's arrival to its response (the ack) on `path`; `gate`
    counts the requests not answered yet (the stories wait for them, handlers/slack/ackgate.py)."""

    @web.middleware
    async def timed(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.method != "POST" or request.path != path:
            return await handler(request)
        started = time.perf_counter()
        token = gate.enter() if gate is not None else None
        try:
            return await handler(request)
        finally:
            if gate is not None and token is not None:
                gate.leave(token)
            metrics.ack.observe(time.perf_counter() - started)

    return timed


def instrument(web_app: web.Application, metrics: BotMetrics, events_path: str,
               gate: AckGate | None = None) -> web.Application:
    """Bolt's aiohttp app with `GET /metrics` beside its events path and the ack timed."""
    web_app.middlewares.append(ack_timer(metrics, events_path, gate))
    web_app.router.add_get(METRICS_PATH, metrics_route(metrics))
    return web_app


class TimedSocketModeHandler(AsyncSocketModeHandler):
    """Bolt's Socket Mode handler, timing each envelope from its arrival to the ack sent back."""

    def __init__(self, *args: Any, metrics: BotMetrics, gate: AckGate | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.metrics = metrics
        self.gate = gate

    async def handle(self, client: Any, req: Any) -> None:
        started = time.perf_counter()
        token = self.gate.enter() if self.gate is not None else None
        try:
            await super().handle(client, req)
        finally:
            if self.gate is not None and token is not None:
                self.gate.leave(token)
            self.metrics.ack.observe(time.perf_counter() - started)


class MetricsServer:
    """`GET /metrics` alone on its own port (Socket Mode, where the bot listens on none)."""

    def __init__(self, metrics: BotMetrics, host: str, port: int) -> None:
        app = web.Application()
        app.router.add_get(METRICS_PATH, metrics_route(metrics))
        self._runner = web.AppRunner(app, access_log=None)
        self._host, self._port = host, port

    async def start(self) -> None:
        await self._runner.setup()
        await web.TCPSite(self._runner, self._host, self._port).start()

    @property
    def port(self) -> int | None:
        addresses = self._runner.addresses
        return int(addresses[0][1]) if addresses else None

    async def stop(self) -> None:
        await self._runner.cleanup()
