"""`deploybot serve`: the Slack app, running inside asyncio.

HTTP mode (default): an aiohttp server on --port with Bolt's `/slack/events` for the slash command, the events
and the interactivity; put it behind a public https URL (Slack calls it). Socket Mode when SLACK_APP_TOKEN is set:
the bot dials out to Slack over a WebSocket, no public URL needed. Either way, the deployments the store says are
active are followed again, each in its own thread, before requests are taken.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
import sys

from aiohttp import web
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_sdk.web.async_client import AsyncWebClient

from bot.config import AppConfig, Secrets
from bot.diagnose.runner import DiagnosisRunner
from bot.pipeline import Pipeline
from bot.store import Store
from handlers.slack.app import EVENTS_PATH, SlackSurface
from handlers.slack.client import SlackSetupError, make_web_client
from handlers.slack.metered import MetricsServer, TimedSocketModeHandler, instrument
from bot.metrics import sample_loop_lag

log = logging.getLogger(__name__)

EXIT_SETUP = 2


class SlackService:
    """The Slack app serving (HTTP or Socket Mode) with its pipeline; `start()` then `stop()`."""

    def __init__(self, config: AppConfig, store: Store, secrets: Secrets, *, port: int = 3000,
                 host: str = "0.0.0.0", client: AsyncWebClient | None = None,
                 metrics_port: int | None = None) -> None:
        """`metrics_port`: where Socket Mode serves `GET /metrics` (HTTP mode serves it on `port`)."""
        if not secrets.slack_bot_token:
            raise SlackSetupError("SLACK_BOT_TOKEN is not set: export the bot token (xoxb-...) of the Slack app")
        if not secrets.slack_app_token and not secrets.slack_signing_secret:
            raise SlackSetupError("SLACK_SIGNING_SECRET is not set (HTTP mode verifies every request with it); "
                                  "or set SLACK_APP_TOKEN (xapp-...) for Socket Mode")
        self.config = config
        self.store = store
        self.secrets = secrets
        self.host = host
        self._port = port
        # The diagnosis runs in its own process: a crash log, however hostile, never holds the acks or SIGTERM.
        self.pipeline = Pipeline(config, store, secrets=secrets, diagnoser=DiagnosisRunner(isolate=True))
        self.surface = SlackSurface(self.pipeline, secrets, client=client or make_web_client(secrets),
                                    until_ready=False)
        self._runner: web.AppRunner | None = None
        self._socket: AsyncSocketModeHandler | None = None
        self._sweeper: asyncio.Future[None] | None = None
        self._metrics_port = metrics_port
        self.metrics_server: MetricsServer | None = None
        self._lag: list[asyncio.Future[None]] = []
        self.discovering: asyncio.Future[None] | None = None

    @property
    def socket_mode(self) -> bool:
        return bool(self.secrets.slack_app_token)

    @property
    def port(self) -> int | None:
        """The port HTTP mode listens on (the real one when 0 was asked for); None in Socket Mode."""
        addresses = self._runner.addresses if self._runner is not None else []
        return int(addresses[0][1]) if addresses else None

    async def start(self) -> int:
        """Resume what was running, then take requests. Returns how many deployments were resumed."""
        self.pipeline.diagnoser.warm_up()
        resumed = await self.surface.resume_active()
        # Not one of the surface's tasks (those are the stories, which drain); ended with the story loop.
        self._sweeper = self.surface.stories.submit(self.surface.expire_forever())
        # Every host probed now, all at once, and again every discovery.refresh_interval_s: the models each has
        # become nameable without a `models:` list. On the story loop, so requests are acked meanwhile.
        self.discovering = self.surface.stories.submit(self.pipeline.discovery.refresh_forever())
        metrics = self.surface.metrics
        self._lag = [asyncio.ensure_future(sample_loop_lag(metrics, "slack")),
                     self.surface.stories.submit(sample_loop_lag(metrics, "stories"))]
        if self.socket_mode:
            if self._metrics_port is not None:
                self.metrics_server = MetricsServer(metrics, self.host, self._metrics_port)
                await self.metrics_server.start()
            self._socket = TimedSocketModeHandler(self.surface.app, self.secrets.slack_app_token, metrics=metrics,
                                                  gate=self.surface.acks)
            await self._socket.connect_async()
        else:
            web_app = instrument(self.surface.app.web_app(path=EVENTS_PATH), metrics, EVENTS_PATH, self.surface.acks)
            self._runner = web.AppRunner(web_app, access_log=None)
            await self._runner.setup()
            await web.TCPSite(self._runner, self.host, self._port).start()
        return len(resumed)

    async def stop(self) -> None:
        """Stop taking requests, then cancel the following (the servers keep running; the next start resumes them)."""
        if self._socket is not None:
            await self._socket.close_async()
            self._socket = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self.metrics_server is not None:
            await self.metrics_server.stop()
            self.metrics_server = None
        for sampler in self._lag:
            sampler.cancel()
        await self.surface.close()  # cancels the stories and closes the pipeline's connections on their loop


def freeze_startup_objects() -> None:
    """Keep what start-up made (modules, classes, the apps: about 100k objects) out of the garbage collector's full
    passes. Measured (bench/bench_ack.py): a full collection over them took about 100 ms, and under a burst of
    deploys the stories' allocations set one off now and then, stalling every ack in flight at once (the slowest
    acks came in clusters of the same length). Collected once first, so no start-up garbage is kept."""
    gc.collect()
    gc.freeze()


async def serve(config: AppConfig, store: Store, secrets: Secrets, *, port: int = 3000, host: str = "0.0.0.0",
                shutdown: asyncio.Event | None = None, metrics_port: int | None = None) -> int:
    """Run until SIGINT / SIGTERM (or `shutdown` is set). Exit code 0, or 2 when the Slack setup is incomplete."""
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        service = SlackService(config, store, secrets, port=port, host=host, metrics_port=metrics_port)
    except SlackSetupError as exc:
        print(f"deploybot serve: {exc}", file=sys.stderr)
        return EXIT_SETUP
    stop = shutdown or asyncio.Event()
    loop = asyncio.get_running_loop()
    handled: list[signal.Signals] = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(signum, stop.set)
            handled.append(signum)
        except (NotImplementedError, RuntimeError):
            pass  # not the main thread, or a platform without signals: `shutdown` still works
    try:
        resumed = await service.start()
        freeze_startup_objects()
        where = "Socket Mode" if service.socket_mode else f"http://{host}:{service.port}{EVENTS_PATH}"
        if service.metrics_server is not None:
            where += f", metrics on http://{host}:{service.metrics_server.port}/metrics"
        log.info("deploybot is listening (%s); %d deployment(s) resumed", where, resumed)
        await stop.wait()
    finally:
        for signum in handled:
            loop.remove_signal_handler(signum)
        await service.stop()
    return 0
