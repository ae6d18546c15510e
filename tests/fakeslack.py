"""A local Slack-compatible Web API server for tests and demos (aiohttp, 127.0.0.1, a free port).

It answers the Web API methods deploybot uses at `/api/<method>` with Slack-shaped JSON, accepts form and JSON
bodies like Slack, checks the bearer token, keeps the messages it was sent (so chat.update must name a message
that exists) and RECORDS every call. `/response/<id>` stands in for a slash command's response_url.
Faults can be injected: a 429 with Retry-After for the next N calls of a method, or `{"ok": false, "error": ...}`.

    async with FakeSlack() as slack:
        client = AsyncWebClient(token=slack.token, base_url=slack.base_url)
        ...
        assert slack.calls("chat.update")[-1].args["ts"] == status_ts

Run `python -m tests.fakeslack` to serve one for a manual demo (SLACK_API_URL=<printed url>).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

from aiohttp import web

BOT_USER_ID = "U0DEPLOYBOT"
BOT_ID = "B0DEPLOYBOT"
TEAM_ID = "T0FAKE"
#: Arguments Slack takes as JSON-encoded strings in form bodies; they are decoded so assertions see structures.
_JSON_ARGS = {"blocks", "attachments", "view", "metadata"}


@dataclass(frozen=True)
class Call:
    """One request as the server saw it."""

    method: str
    args: dict[str, Any]
    at: float  # time.monotonic() on arrival
    status: int  # HTTP status answered
    response: dict[str, Any]

    @property
    def ok(self) -> bool:
        return self.status == 200 and bool(self.response.get("ok"))


@dataclass
class Message:
    channel: str
    ts: str
    text: str | None
    blocks: list[dict] | None
    thread_ts: str | None
    user: str = BOT_USER_ID
    edits: int = 0

    def as_slack(self) -> dict[str, Any]:
        data: dict[str, Any] = {"type": "message", "user": self.user, "bot_id": BOT_ID, "ts": self.ts, "team": TEAM_ID}
        if self.text is not None:
            data["text"] = self.text
        if self.blocks is not None:
            data["blocks"] = self.blocks
        if self.thread_ts is not None:
            data["thread_ts"] = self.thread_ts
        if self.edits:
            data["edited"] = {"user": self.user, "ts": self.ts}
        return data


@dataclass
class _Fault:
    times: int
    status: int
    error: str
    retry_after: int | None = None


@dataclass
class FakeSlack:
    """See the module docstring. `token`: the only bot token accepted."""

    token: str = "xoxb-fake-deploybot-token"
    #: The app-level token Socket Mode dials out with (apps.connections.open accepts only this one).
    app_token: str = "xapp-fake-deploybot-token"
    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    channels: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._calls: list[Call] = []
        self._messages: dict[tuple[str, str], Message] = {}
        self._faults: dict[str, list[_Fault]] = {}
        self._responses: dict[str, list[dict[str, Any]]] = {}
        self._ts_counter = itertools.count(1)
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self.port: int | None = None
        # Socket Mode: the bot's open WebSocket and the acks it sent back, by envelope id.
        self._socket: web.WebSocketResponse | None = None
        self._socket_acks: dict[str, dict[str, Any]] = {}
        self.socket_connections = 0

    # ----------------------------------------------------------------------------------------- lifecycle

    async def __aenter__(self) -> "FakeSlack":
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def start(self, port: int = 0) -> None:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_post("/response/{response_id}", self._response_url)
        app.router.add_get("/socket", self._socket_link)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        # Bind the socket ourselves so the chosen free port is known without reaching into aiohttp's internals.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        self.port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock).start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @property
    def base_url(self) -> str:
        """The Web API root, as SLACK_API_URL / AsyncWebClient(base_url=...) take it."""
        if self.port is None:
            raise RuntimeError("FakeSlack is not started")
        return f"http://127.0.0.1:{self.port}/api/"

    # ----------------------------------------------------------------------------------------- assertions

    def calls(self, method: str | None = None) -> list[Call]:
        """Every call of `method` (all methods when None), in arrival order, faults included."""
        return [call for call in self._calls if method is None or call.method == method]

    def ok_calls(self, method: str | None = None) -> list[Call]:
        return [call for call in self.calls(method) if call.ok]

    def message(self, channel: str, ts: str) -> Message | None:
        return self._messages.get((channel, ts))

    def messages(self, channel: str | None = None) -> list[Message]:
        """Messages as they stand now (updates applied), in posting order."""
        return [m for m in self._messages.values() if channel is None or m.channel == channel]

    def replies(self, channel: str, thread_ts: str) -> list[Message]:
        """The replies in a thread (the parent excluded), in posting order."""
        return [m for m in self._messages.values() if m.channel == channel and m.thread_ts == thread_ts and m.ts != thread_ts]

    def response_url(self, response_id: str | None = None) -> str:
        """A fresh response_url to put in a slash command or block_actions payload."""
        response_id = response_id or uuid.uuid4().hex[:12]
        self._responses.setdefault(response_id, [])
        return f"http://127.0.0.1:{self.port}/response/{response_id}"

    def responses(self, response_url_or_id: str) -> list[dict[str, Any]]:
        """What was posted to a response_url (ephemeral answers, replace_original, ...)."""
        return self._responses.get(response_url_or_id.rstrip("/").rsplit("/", 1)[-1], [])

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 10.0) -> None:
        """Wait until `predicate()` holds (checked after every request), for work a background task does.
        The timeout only guards against a hang; tests never assert on how long it took."""
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(predicate), timeout)

    # ----------------------------------------------------------------------------------------- faults

    def rate_limit(self, method: str, times: int = 1, retry_after: int = 0) -> None:
        """Answer the next `times` calls of `method` with HTTP 429 and Retry-After (seconds), like Slack's tiers."""
        self._faults.setdefault(method, []).append(_Fault(times, 429, "ratelimited", retry_after))

    def fail(self, method: str, error: str, times: int = 1, status: int = 200) -> None:
        """Answer the next `times` calls of `method` with `{"ok": false, "error": error}`."""
        self._faults.setdefault(method, []).append(_Fault(times, status, error))

    def _take_fault(self, method: str) -> _Fault | None:
        queue = self._faults.get(method)
        if not queue:
            return None
        fault = queue[0]
        fault.times -= 1
        if fault.times <= 0:
            queue.pop(0)
        return fault

    # ----------------------------------------------------------------------------------------- HTTP

    async def _read_args(self, request: web.Request) -> dict[str, Any]:
        args: dict[str, Any] = dict(request.query)
        if request.method == "POST" and request.can_read_body:
            if request.content_type == "application/json":
                body = await request.json()
                if isinstance(body, dict):
                    args.update(body)
            else:
                form = await request.post()
                args.update({key: value for key, value in form.items() if isinstance(value, str)})
        for key in _JSON_ARGS & args.keys():
            if isinstance(args[key], str):
                try:
                    args[key] = json.loads(args[key])
                except json.JSONDecodeError:
                    pass  # left as sent; the method answers invalid_blocks etc. where it matters
        return args

    def _token_of(self, request: web.Request, args: dict[str, Any]) -> str | None:
        header = request.headers.get("Authorization", "")
        if header.startswith("Bearer "):
            return header[len("Bearer ") :]
        token = args.pop("token", None)
        return token if isinstance(token, str) else None

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        args = await self._read_args(request)
        token = self._token_of(request, args)
        headers: dict[str, str] = {}
        fault = self._take_fault(method)
        if token is None:
            status, body = 200, {"ok": False, "error": "not_authed"}
        elif token != (self.app_token if method == "apps.connections.open" else self.token):
            status, body = 200, {"ok": False, "error": "invalid_auth"}
        elif fault is not None:
            status, body = fault.status, {"ok": False, "error": fault.error}
            if fault.retry_after is not None:
                headers["Retry-After"] = str(fault.retry_after)
        else:
            handler = self._methods().get(method)
            if handler is None:
                status, body = 404, {"ok": False, "error": "unknown_method"}
            else:
                status, body = 200, handler(args)
        self._calls.append(Call(method=method, args=args, at=time.monotonic(), status=status, response=body))
        async with self._changed:
            self._changed.notify_all()
        return web.json_response(body, status=status, headers=headers)

    async def _response_url(self, request: web.Request) -> web.Response:
        response_id = request.match_info["response_id"]
        if response_id not in self._responses:
            return web.json_response({"ok": False, "error": "expired_url"}, status=404)
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return web.json_response({"ok": False, "error": "invalid_json"}, status=400)
        self._responses[response_id].append(body)
        self._calls.append(Call(method="response_url", args=body, at=time.monotonic(), status=200, response={"ok": True}))
        async with self._changed:
            self._changed.notify_all()
        return web.json_response({"ok": True})

    # ----------------------------------------------------------------------------------------- Web API methods

    def _methods(self) -> dict[str, Callable[[dict[str, Any]], dict[str, Any]]]:
        return {
            "auth.test": self._auth_test,
            "chat.postMessage": self._post_message,
            "chat.update": self._update,
            "chat.postEphemeral": self._post_ephemeral,
            "chat.getPermalink": self._permalink,
            "views.publish": self._views_publish,
            "users.info": self._users_info,
            "conversations.info": self._conversations_info,
            "conversations.replies": self._conversations_replies,
            "apps.connections.open": self._connections_open,
        }

    # ----------------------------------------------------------------------------------------- Socket Mode

    def _connections_open(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/socket"}

    async def _socket_link(self, request: web.Request) -> web.WebSocketResponse:
        """Slack's side of a Socket Mode link: says hello, pushes envelopes, records the acks that come back."""
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self._socket = ws
        self.socket_connections += 1
        async with self._changed:
            self._changed.notify_all()
        await ws.send_json({"type": "hello", "num_connections": 1, "debug_info": {"host": "fakeslack"},
                            "connection_info": {"app_id": "AFAKE"}})
        async for message in ws:
            if message.type != web.WSMsgType.TEXT:
                continue
            ack = json.loads(message.data)
            if "envelope_id" in ack:
                self._socket_acks[ack["envelope_id"]] = ack
                async with self._changed:
                    self._changed.notify_all()
        if self._socket is ws:
            self._socket = None
        return ws

    async def socket_send(self, kind: str, payload: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
        """Deliver one envelope (`slash_commands`, `events_api`, `interactive`) over the bot's Socket Mode link and
        return the bot's ack, as Slack would wait for it."""
        await self.wait_for(lambda: self._socket is not None, timeout)
        assert self._socket is not None
        envelope_id = f"env-{next(self._ts_counter)}"
        await self._socket.send_json({"envelope_id": envelope_id, "type": kind, "payload": payload,
                                      "accepts_response_payload": kind != "events_api", "retry_attempt": 0,
                                      "retry_reason": ""})
        await self.wait_for(lambda: envelope_id in self._socket_acks, timeout)
        return self._socket_acks[envelope_id]

    def _next_ts(self) -> str:
        n = next(self._ts_counter) * 100
        return f"{1_700_000_000 + n // 1_000_000}.{n % 1_000_000:06d}"

    @staticmethod
    def _missing(args: dict[str, Any], *names: str) -> dict[str, Any] | None:
        for name in names:
            if not args.get(name):
                return {"ok": False, "error": "invalid_arguments", "response_metadata": {"messages": [f"missing {name}"]}}
        return None

    @staticmethod
    def _content_error(args: dict[str, Any]) -> dict[str, Any] | None:
        if not args.get("text") and not args.get("blocks"):
            return {"ok": False, "error": "no_text"}
        blocks = args.get("blocks")
        if blocks is not None and (not isinstance(blocks, list) or len(blocks) > 50):
            return {"ok": False, "error": "invalid_blocks"}
        return None

    def _auth_test(self, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "ok": True,
            "url": "https://fake.slack.test/",
            "team": "Fake Team",
            "user": "deploybot",
            "team_id": TEAM_ID,
            "user_id": BOT_USER_ID,
            "bot_id": BOT_ID,
            "is_enterprise_install": False,
        }

    def _post_message(self, args: dict[str, Any]) -> dict[str, Any]:
        error = self._missing(args, "channel") or self._content_error(args)
        if error:
            return error
        channel = args["channel"]
        thread_ts = args.get("thread_ts") or None
        if thread_ts and (channel, thread_ts) not in self._messages:
            return {"ok": False, "error": "thread_not_found"}
        message = Message(channel=channel, ts=self._next_ts(), text=args.get("text"), blocks=args.get("blocks"), thread_ts=thread_ts)
        self._messages[(channel, message.ts)] = message
        return {"ok": True, "channel": channel, "ts": message.ts, "message": message.as_slack()}

    def _update(self, args: dict[str, Any]) -> dict[str, Any]:
        error = self._missing(args, "channel", "ts") or self._content_error(args)
        if error:
            return error
        message = self._messages.get((args["channel"], args["ts"]))
        if message is None:
            return {"ok": False, "error": "message_not_found"}
        message.text = args.get("text", message.text)
        message.blocks = args.get("blocks", message.blocks)
        message.edits += 1
        return {"ok": True, "channel": message.channel, "ts": message.ts, "text": message.text, "message": message.as_slack()}

    def _post_ephemeral(self, args: dict[str, Any]) -> dict[str, Any]:
        error = self._missing(args, "channel", "user") or self._content_error(args)
        return error or {"ok": True, "message_ts": self._next_ts()}

    def _permalink(self, args: dict[str, Any]) -> dict[str, Any]:
        error = self._missing(args, "channel", "message_ts")
        if error:
            return error
        if (args["channel"], args["message_ts"]) not in self._messages:
            return {"ok": False, "error": "message_not_found"}
        return {
            "ok": True,
            "channel": args["channel"],
            "permalink": f"https://fake.slack.test/archives/{args['channel']}/p{args['message_ts'].replace('.', '')}",
        }

    def _views_publish(self, args: dict[str, Any]) -> dict[str, Any]:
        error = self._missing(args, "user_id", "view")
        if error:
            return error
        view = args["view"]
        if not isinstance(view, dict) or view.get("type") != "home" or len(view.get("blocks", [])) > 100:
            return {"ok": False, "error": "invalid_arguments"}
        return {"ok": True, "view": {"id": "V" + uuid.uuid4().hex[:10].upper(), "team_id": TEAM_ID, **view}}

    def _users_info(self, args: dict[str, Any]) -> dict[str, Any]:
        error = self._missing(args, "user")
        if error:
            return error
        user_id = args["user"]
        user = self.users.get(user_id)
        if user is None and user_id != BOT_USER_ID:
            return {"ok": False, "error": "user_not_found"}
        profile = user or {"name": "deploybot", "is_bot": True}
        return {
            "ok": True,
            "user": {"id": user_id, "team_id": TEAM_ID, "tz": "UTC", "is_bot": False, "deleted": False, **profile},
        }

    def _conversations_info(self, args: dict[str, Any]) -> dict[str, Any]:
        error = self._missing(args, "channel")
        if error:
            return error
        channel_id = args["channel"]
        channel = self.channels.get(channel_id, {"name": channel_id.lower()})
        return {
            "ok": True,
            "channel": {"id": channel_id, "is_channel": True, "is_private": False, "is_member": True, **channel},
        }

    def _conversations_replies(self, args: dict[str, Any]) -> dict[str, Any]:
        error = self._missing(args, "channel", "ts")
        if error:
            return error
        parent = self._messages.get((args["channel"], args["ts"]))
        if parent is None:
            return {"ok": False, "error": "thread_not_found"}
        thread = [parent] + self.replies(args["channel"], args["ts"])
        return {"ok": True, "messages": [m.as_slack() for m in thread], "has_more": False}


async def _serve_forever() -> None:
    async with FakeSlack() as slack:
        print(f"SLACK_API_URL={slack.base_url}\nSLACK_BOT_TOKEN={slack.token}", flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    try:
        asyncio.run(_serve_forever())
    except KeyboardInterrupt:
        pass
