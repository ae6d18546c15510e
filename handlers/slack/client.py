"""The Slack Web API client deploybot uses: token and endpoint from the environment, slack_sdk's retry handlers."""

from __future__ import annotations

from urllib.parse import urlparse

from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

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
