"""The Slack Web API client deploybot uses: token and endpoint from the environment, slack_sdk's retry handlers."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlparse

import aiohttp
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_internal_utils import _request_with_session

from bot.config import Secrets


class SlackSetupError(ValueError):
    """The environment does not describe a usable Slack connection; the message says which variable to fix."""


def retry_handlers() -> list[AsyncRetryHandler]:
    """Retries for what passes on its own: a dropped connection, a 429 (waits Retry-After), a 500/503."""
    return [
        AsyncConnectionErrorRetryHandler(max_retry_count=2),
        # Slack allows about one message per second per channel; a burst of updates may meet a 429 or two.
        AsyncRateLimitErrorRetryHandler(max_retry_count=3),
        AsyncServerErrorRetryHandler(max_retry_count=2),
    ]


def api_base_url(url: str) -> str:
    """SLACK_API_URL checked and normalised: an http(s) URL ending with '/' (slack_sdk appends method names)."""
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise SlackSetupError(f"SLACK_API_URL must be an http(s) URL such as http://127.0.0.1:8999/api/, not {url!r}")
    return url if url.endswith("/") else url + "/"


def make_web_client(secrets: Secrets) -> AsyncWebClient:
    """An AsyncWebClient with the bot token, pointed at SLACK_API_URL when set (a local Slack-compatible server)."""
    if not secrets.slack_bot_token:
        raise SlackSetupError("SLACK_BOT_TOKEN is not set: export the bot token (xoxb-...) of the Slack app")
    base_url = api_base_url(secrets.slack_api_url) if secrets.slack_api_url else AsyncWebClient.BASE_URL
    return AsyncWebClient(token=secrets.slack_bot_token, base_url=base_url, retry_handlers=retry_handlers())


class LoopPooledWebClient(AsyncWebClient):
    """An AsyncWebClient that keeps its HTTP connections open on ONE event loop (the stories' loop).

    slack_sdk's default opens a new aiohttp session, so a new TCP (and, to Slack, TLS) connection, for every call:
    measured under a burst of deploys, connection setup was about a quarter of the stories' CPU (bench_ack.py
    --profile), CPU the loop that acks then waits for. A session belongs to the loop it was made on, so calls from
    any other loop (a test calling a surface method directly) go the default way, one session per call.
    """

    def __init__(self, *args: Any, loop: asyncio.AbstractEventLoop, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pool_loop = loop
        self._pooled: aiohttp.ClientSession | None = None

    async def _request(self, *, http_verb: str, api_url: str, req_args: dict) -> dict[str, Any]:
        if asyncio.get_running_loop() is not self._pool_loop:
            return await super()._request(http_verb=http_verb, api_url=api_url, req_args=req_args)
        if self._pooled is None or self._pooled.closed:
            self._pooled = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout))
        # As AsyncWebClient._request does, with the pooled session instead of self.session.
        return await _request_with_session(current_session=self._pooled, timeout=self.timeout, logger=self._logger,
                                           http_verb=http_verb, api_url=api_url, req_args=req_args,
                                           retry_handlers=self.retry_handlers)

    async def close(self) -> None:
        """(On the pooled loop.) Close the kept connections."""
        if self._pooled is not None:
            await self._pooled.close()
            self._pooled = None


def pooled_copy(client: AsyncWebClient, loop: asyncio.AbstractEventLoop) -> LoopPooledWebClient:
    """The same token, endpoint, timeout and retries as `client`, keeping its connections on `loop`."""
    return LoopPooledWebClient(token=client.token, base_url=client.base_url, timeout=client.timeout, ssl=client.ssl,
                               proxy=client.proxy, headers=dict(client.headers),
                               retry_handlers=list(client.retry_handlers), loop=loop)
