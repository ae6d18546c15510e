"""Replies in a deployment's thread, turned into pipeline operations: `status`, `logs [N]`, `stop`, `restart`,
`diagnose`, `bench` (a short bounded load: tok/s, TTFT, ITL, accept length at 1 and 8 concurrent), `help`. The bot reads only people's messages in threads it started (never its own or other bots'),
and only replies that are one of its words: people talk in threads too.
"""

from __future__ import annotations

import re
import time
from typing import Any, Literal

from pydantic import Field
from slack_bolt.context.async_context import AsyncBoltContext

from bot.models import DeployRequest, Deployment, Frozen
from bot.pipeline import Requester
from handlers.slack.access import host_refusal
from handlers.slack.blocks.mrkdwn import escape_keeping_mentions
from handlers.slack.blocks.replies import thread_help_text
from handlers.slack.stories import Surface, Told

LOGS_DEFAULT_LINES = 30
LOGS_MAX_LINES = 200

ThreadCommandName = Literal["status", "logs", "stop", "restart", "diagnose", "bench", "help"]

_THREAD_COMMAND = re.compile(
    r"^\s*(?:<@[UW][A-Z0-9]+>[\s,:]*)?"  # "@deploybot logs 5" works as well as "logs 5"
    r"(?P<name>status|logs|stop|restart|diagnose|bench|help)"
    r"(?:\s+(?P<lines>\d{1,6}))?\s*[.!?]*\s*$",
    re.IGNORECASE,
)


class ThreadCommand(Frozen):
    name: ThreadCommandName
    lines: int = Field(default=LOGS_DEFAULT_LINES, ge=1, le=LOGS_MAX_LINES)


def parse_thread_command(text: str) -> ThreadCommand | None:
    """A reply in a deployment thread that is one of the bot's words, else None (people talk in threads too)."""
    match = _THREAD_COMMAND.match(text or "")
    if match is None:
        return None
    name = match["name"].lower()
    if match["lines"] is not None:
        if name != "logs":
            return None  # "stop 3" is not something the bot says it understands
        return ThreadCommand(name="logs", lines=max(1, min(LOGS_MAX_LINES, int(match["lines"]))))
    return ThreadCommand(name=name)  # type: ignore[arg-type]


class ThreadCommands:
    """The thread replies of one Slack surface: who may, then the operation, told as replies in the thread."""

    def __init__(self, surface: Surface) -> None:
        self.surface = surface
        self.pipeline = surface.pipeline
        self.store = surface.store
        self.config = surface.config
        self.client = surface.client
        self.until_ready = surface.until_ready

    def _from_a_person(self, event: dict[str, Any], context: AsyncBoltContext) -> bool:
        if event.get("bot_id") or (event.get("app_id") and not event.get("user")):
            return False  # any bot, this one included
        if event.get("subtype") not in (None, "thread_broadcast"):
            return False  # edits, deletions, joins, bot_message...
        user = event.get("user")
        return bool(user) and user != context.get("bot_user_id")

    async def on_message(self, event: dict[str, Any], body: dict[str, Any], context: AsyncBoltContext) -> None:
        thread_ts, ts = event.get("thread_ts"), event.get("ts")
        if not thread_ts or thread_ts == ts or not self._from_a_person(event, context):
            return
        command = parse_thread_command(event.get("text", ""))
        if command is None:
            return
        event_id = body.get("event_id")
        if event_id and not await self.store.first_delivery(f"event:{event_id}"):
            return  # Slack's redelivery of an event already handled
        channel, user = event["channel"], event["user"]
        dep = await self.store.deployment_for_thread(channel, thread_ts)
        if dep is None:
            return  # not a deployment thread
        if command.name != "help":
            refusal = host_refusal(self.config, dep.host, user, channel)
            if refusal is not None:
                await self.store.audit(command.name, actor=user, host=dep.host, deployment_id=dep.id,
                                       result="refused", detail=refusal)
                await self.client.chat_postEphemeral(channel=channel, user=user, thread_ts=thread_ts,
                                                     text=f"🚫 {escape_keeping_mentions(refusal)}")
                return
        self.surface.spawn(self._command(command, dep, user, channel, thread_ts), name=f"{command.name}:{dep.id}")

    async def _command(self, command: ThreadCommand, dep: Deployment, user: str, channel: str,
                              thread_ts: str) -> None:
        who = Requester(user, channel, thread_ts)
        target = DeployRequest(action="status", host=dep.host, model=dep.model, port=dep.port)
        if command.name == "restart":
            # A new deployment: its own status message in the same thread.
            thread = self.surface.thread(channel, thread_ts=thread_ts, requested_at=time.perf_counter())
            request = target.model_copy(update={"action": "restart"})
            told = Told(thread, self.store, self.surface.acks)
            await self.surface.run(thread, self.pipeline.handle_request(request, told, who,
                                                                        until_ready=self.until_ready))
            return
        reply = self.surface.thread(channel, thread_ts=thread_ts, status_message=False,
                                    max_lines=command.lines if command.name == "logs" else None)
        if command.name == "help":
            await reply.post(thread_help_text())
        elif command.name == "status":
            await self.surface.run(reply, self.pipeline.status(dep.host, reply))
        elif command.name == "stop":
            stop = target.model_copy(update={"action": "stop"})
            await self.surface.run(reply, self.pipeline.stop_request(stop, reply, who))
        elif command.name == "logs":
            await self.surface.run(reply, self.pipeline.deployment_logs(dep, reply, command.lines))
        elif command.name == "bench":
            await self.surface.run(reply, self.pipeline.bench_deployment(dep, reply))
        else:
            await self.surface.run(reply, self.pipeline.diagnose_deployment(dep, reply))

