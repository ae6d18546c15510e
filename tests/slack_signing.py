"""Correctly signed Slack HTTP requests, as Slack sends them to a Bolt app (for tests of the request handlers).

The v0 signature is written out here from Slack's specification (not borrowed from slack_sdk's verifier), so a test
that passes these through Bolt checks the verifier against the spec:

    basestring = "v0:" + X-Slack-Request-Timestamp + ":" + raw body
    X-Slack-Signature = "v0=" + hex(HMAC-SHA256(signing secret, basestring))

Each builder returns a SignedRequest: POST it to the app (`aiohttp` `data=req.body, headers=req.headers`) or hand
it to Bolt directly: `AsyncBoltRequest(body=req.text, headers=req.headers)`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlencode

FORM = "application/x-www-form-urlencoded"
JSON = "application/json"
TEAM_ID = "T0FAKE"
#: Slack (and Bolt) refuse requests whose timestamp is more than five minutes away.
MAX_AGE_S = 5 * 60


def signature(signing_secret: str, timestamp: int | str, body: bytes) -> str:
    basestring = b"v0:" + str(timestamp).encode() + b":" + body
    return "v0=" + hmac.new(signing_secret.encode(), basestring, hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class SignedRequest:
    body: bytes
    content_type: str
    timestamp: int
    signature: str

    @property
    def text(self) -> str:
        return self.body.decode()

    @property
    def headers(self) -> dict[str, str]:
        return {
            "content-type": self.content_type,
            "x-slack-request-timestamp": str(self.timestamp),
            "x-slack-signature": self.signature,
        }


def sign(signing_secret: str, body: bytes, content_type: str, *, timestamp: int | None = None) -> SignedRequest:
    ts = int(time.time()) if timestamp is None else timestamp
    return SignedRequest(body=body, content_type=content_type, timestamp=ts, signature=signature(signing_secret, ts, body))


def with_bad_signature(request: SignedRequest) -> SignedRequest:
    """The same request signed with another secret: the app must answer 401 and do nothing."""
    return replace(request, signature=signature("not-the-signing-secret", request.timestamp, request.body))


def with_old_timestamp(request: SignedRequest, signing_secret: str, age_s: int = MAX_AGE_S + 60) -> SignedRequest:
    """The same body, correctly signed, but `age_s` seconds old (a replay): the app must refuse it."""
    return sign(signing_secret, request.body, request.content_type, timestamp=int(time.time()) - age_s)


# --------------------------------------------------------------------------------------------- slash commands


def slash_command(
    signing_secret: str,
    *,
    text: str,
    command: str = "/deploy",
    user_id: str = "U0ALICE",
    user_name: str = "alice",
    channel_id: str = "C0DEPLOY",
    channel_name: str = "gpu-ops",
    response_url: str = "https://hooks.slack.com/commands/T0FAKE/1/abc",
    trigger_id: str | None = None,
    team_id: str = TEAM_ID,
    timestamp: int | None = None,
) -> SignedRequest:
    body = urlencode(
        {
            "token": "deprecated-verification-token",
            "team_id": team_id,
            "team_domain": "fake",
            "channel_id": channel_id,
            "channel_name": channel_name,
            "user_id": user_id,
            "user_name": user_name,
            "command": command,
            "text": text,
            "api_app_id": "A0DEPLOYBOT",
            "is_enterprise_install": "false",
            "response_url": response_url,
            "trigger_id": trigger_id or f"{int(time.time())}.{uuid.uuid4().hex[:10]}",
        }
    ).encode()
    return sign(signing_secret, body, FORM, timestamp=timestamp)


# --------------------------------------------------------------------------------------------- Events API


def event_callback(signing_secret: str, event: dict[str, Any], *, team_id: str = TEAM_ID, timestamp: int | None = None) -> SignedRequest:
    body = json.dumps(
        {
            "token": "deprecated-verification-token",
            "team_id": team_id,
            "api_app_id": "A0DEPLOYBOT",
            "event": event,
            "type": "event_callback",
            "event_id": "Ev" + uuid.uuid4().hex[:10].upper(),
            "event_time": int(time.time()),
            "authorizations": [{"team_id": team_id, "user_id": "U0DEPLOYBOT", "is_bot": True}],
        }
    ).encode()
    return sign(signing_secret, body, JSON, timestamp=timestamp)


def thread_message(
    signing_secret: str,
    *,
    text: str,
    thread_ts: str,
    user: str = "U0ALICE",
    channel: str = "C0DEPLOY",
    channel_type: str = "channel",
    ts: str | None = None,
    timestamp: int | None = None,
) -> SignedRequest:
    """A person's reply in a deployment thread (Events API `message` with thread_ts)."""
    event = {
        "type": "message",
        "user": user,
        "text": text,
        "ts": ts or f"{time.time():.6f}",
        "thread_ts": thread_ts,
        "channel": channel,
        "channel_type": channel_type,
        "event_ts": ts or f"{time.time():.6f}",
    }
    return event_callback(signing_secret, event, timestamp=timestamp)


def app_home_opened(signing_secret: str, *, user: str = "U0ALICE", timestamp: int | None = None) -> SignedRequest:
    event = {"type": "app_home_opened", "user": user, "channel": "D0HOME", "tab": "home", "event_ts": f"{time.time():.6f}"}
    return event_callback(signing_secret, event, timestamp=timestamp)


# --------------------------------------------------------------------------------------------- interactivity


def block_action(
    signing_secret: str,
    *,
    action_id: str,
    value: str,
    user_id: str = "U0BOB",
    channel_id: str = "C0DEPLOY",
    message_ts: str = "1700000000.000300",
    thread_ts: str | None = "1700000000.000100",
    block_id: str = "deploybot_approval",
    response_url: str = "https://hooks.slack.com/actions/T0FAKE/1/abc",
    timestamp: int | None = None,
) -> SignedRequest:
    """A button press (`block_actions`), form-encoded as `payload=<json>` like Slack sends it."""
    message: dict[str, Any] = {"type": "message", "ts": message_ts, "user": "U0DEPLOYBOT", "text": "approval"}
    if thread_ts:
        message["thread_ts"] = thread_ts
    payload = {
        "type": "block_actions",
        "team": {"id": TEAM_ID, "domain": "fake"},
        "user": {"id": user_id, "username": user_id.lower(), "team_id": TEAM_ID},
        "api_app_id": "A0DEPLOYBOT",
        "token": "deprecated-verification-token",
        "container": {"type": "message", "message_ts": message_ts, "channel_id": channel_id, "is_ephemeral": False},
        "trigger_id": f"{int(time.time())}.{uuid.uuid4().hex[:10]}",
        "channel": {"id": channel_id, "name": "gpu-ops"},
        "message": message,
        "response_url": response_url,
        "actions": [
            {
                "type": "button",
                "action_id": action_id,
                "block_id": block_id,
                "value": value,
                "text": {"type": "plain_text", "text": action_id},
                "action_ts": f"{time.time():.6f}",
            }
        ],
    }
    body = urlencode({"payload": json.dumps(payload)}).encode()
    return sign(signing_secret, body, FORM, timestamp=timestamp)
