"""The Slack app manifest of deploybot: paste it into api.slack.com/apps ("Create New App" -> "From a manifest").

Only the scopes the bot uses are asked for; each one says why (BOT_SCOPES).
"""

from __future__ import annotations

import json
import re
from typing import Literal
from urllib.parse import urlparse

import yaml

DEPLOY_COMMAND = "/deploy"
DEPLOY_USAGE_HINT = "Qwen3-8B on CT129 with MTP | status CT129 | stop Qwen3-8B on CT129 | help"

#: scope -> why deploybot needs it.
BOT_SCOPES: dict[str, str] = {
    "commands": "the /deploy slash command",
    "chat:write": "post and update the status message and thread replies",
    "channels:history": "read replies in deployment threads of public channels (message.channels)",
    "groups:history": "read replies in deployment threads of private channels (message.groups)",
    "users:read": "show who asked and who approved (users.info)",
}
# Not asked for: chat:write.public (the bot must be in the channel anyway to read thread replies: invite it),
# im:history / message.im (the App Home has no messages tab), channels:read (channel IDs come with each request).

BOT_EVENTS: tuple[str, ...] = ("message.channels", "message.groups", "app_home_opened")


class ManifestError(ValueError):
    """The manifest cannot be built from these arguments; the message says what to pass."""


def _display_name(app_name: str) -> str:
    # Slack's bot display name: lowercase letters, digits, '.', '-', '_' only.
    name = re.sub(r"[^a-z0-9._-]+", "-", app_name.lower()).strip("-")
    return name[:80] or "deploybot"


def _check_request_url(url: str) -> str:
    parsed = urlparse(url)
    if parsed.scheme != "https" or not parsed.netloc:
        raise ManifestError(f"request_url must be a public https URL (Slack calls it), not {url!r}")
    return url


def manifest(app_name: str = "deploybot", request_url: str | None = None, socket_mode: bool = False) -> dict:
    """The app manifest as a dict. HTTP mode needs `request_url` (Bolt's endpoint, e.g.
    https://bot.example.com/slack/events) for the command, events and interactivity; Socket Mode needs none."""
    if not app_name.strip() or len(app_name) > 35:
        raise ManifestError("app_name must be 1 to 35 characters (Slack's limit)")
    if not socket_mode and request_url is None:
        raise ManifestError("request_url is required unless socket_mode is on (Slack must know where to send events)")
    url = _check_request_url(request_url) if request_url is not None and not socket_mode else None

    command: dict[str, object] = {
        "command": DEPLOY_COMMAND,
        "description": "Start, stop or check an LLM inference server on a GPU host",
        "usage_hint": DEPLOY_USAGE_HINT,
        # Raw text: names like Qwen3-8B must arrive as typed, not turned into <@U..>/<#C..> links.
        "should_escape": False,
    }
    event_subscriptions: dict[str, object] = {"bot_events": list(BOT_EVENTS)}
    interactivity: dict[str, object] = {"is_enabled": True}
    if url is not None:
        command["url"] = url
        event_subscriptions["request_url"] = url
        interactivity["request_url"] = url

    return {
        "_metadata": {"major_version": 1, "minor_version": 1},
        "display_information": {
            "name": app_name,
            "description": "Puts LLM inference servers (SGLang, vLLM) into service on GPU hosts",
            "background_color": "#2c3e50",
        },
        "features": {
            "app_home": {"home_tab_enabled": True, "messages_tab_enabled": False, "messages_tab_read_only_enabled": False},
            "bot_user": {"display_name": _display_name(app_name), "always_online": True},
            "slash_commands": [command],
        },
        "oauth_config": {"scopes": {"bot": list(BOT_SCOPES)}},
        "settings": {
            "event_subscriptions": event_subscriptions,
            "interactivity": interactivity,
            "org_deploy_enabled": False,
            "socket_mode_enabled": socket_mode,
            "token_rotation_enabled": False,
        },
    }


def render_manifest(data: dict, fmt: Literal["yaml", "json"] = "yaml") -> str:
    """The manifest as Slack's editor shows it (YAML) or as JSON."""
    if fmt == "json":
        return json.dumps(data, indent=2) + "\n"
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
