"""`/deploy TEXT`: acknowledged at once, within Slack's 3 s in every case.

A redelivery, help, a parse error or a refusal is answered in the ack itself (ephemeral); a request is acked empty
and runs afterwards on the story loop, told in a channel thread (a parent message, one status message updated in
place, replies). A name the inventory does not know yet is looked for by probing, after the ack, never before it.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.errors import SlackApiError

from bot.discovery import RESOLVE_BY_PROBING
from bot.models import DeployRequest, ParseError
from bot.pipeline import Requester
from bot.request import help_text, is_help_request, parse_request
from handlers.slack.access import request_refusal
from handlers.slack.blocks.mrkdwn import escape_keeping_mentions
from handlers.slack.blocks.replies import help_blocks, parent_text, parse_error_text
from handlers.slack.stories import Surface, Told

log = logging.getLogger(__name__)


class DeployCommand:
    """The `/deploy` slash command of one Slack surface."""

    def __init__(self, surface: Surface) -> None:
        self.surface = surface
        self.pipeline = surface.pipeline
        self.store = surface.store
        self.config = surface.config
        self.until_ready = surface.until_ready

    async def on_command(self, ack: AsyncAck, command: dict[str, Any]) -> None:
        received = time.perf_counter()  # request-to-PID starts here
        user, channel = command.get("user_id", ""), command.get("channel_id", "")
        text = command.get("text") or ""
        trigger = command.get("trigger_id")
        try:
            if trigger and not await self.store.first_delivery(f"command:{trigger}"):
                await ack()  # Slack's redelivery of a command already taken: it runs once
                return
            if not text.strip() or is_help_request(text):
                help_ = help_text(self.pipeline.inventory())
                await ack(response_type="ephemeral", text=help_, blocks=help_blocks(help_))
                return
            inventory = self.pipeline.inventory()
            parsed = parse_request(text, inventory)
            if isinstance(parsed, ParseError) and parsed.kind in RESOLVE_BY_PROBING:
                # Maybe a folder copied since the last probe: the host is probed after the ack, never before it.
                await ack()
                self.surface.spawn(self._after_probe(text, user, channel, command.get("response_url"), received),
                                   name=f"deploy:{trigger}")
                return
            if isinstance(parsed, ParseError):
                await ack(response_type="ephemeral", text=parse_error_text(parsed))
                await self.store.audit("parse", actor=user, result="refused", detail=f"{parsed.kind}: {text[:200]}")
                return
            hosts_with_model = [name for name, h in inventory.hosts.items() if parsed.model in h.models]
            refusal = request_refusal(self.config, parsed, user, channel, hosts_with_model)
            if refusal is not None:
                await ack(response_type="ephemeral", text=f"🚫 {escape_keeping_mentions(refusal)}")
                await self.store.audit(parsed.action, actor=user, host=parsed.host, result="refused",
                                       detail=f"not authorized in {channel}: {refusal}")
                return
        except Exception:
            log.exception("/deploy failed before its ack")
            await ack(response_type="ephemeral", text="deploybot hit an internal error; the operator's log has it")
            return
        await ack()
        self.surface.spawn(self._deploy(parsed, text, user, channel, command.get("response_url"), received),
                           name=f"deploy:{trigger}")

    async def _after_probe(self, text: str, user: str, channel: str, response_url: str | None,
                                  received: float | None = None) -> None:
        """A name the inventory did not have: one probe of the host named (all when none is), read again, then
        deploy, or answer the parse error as the ack would have (ephemeral, through the response URL)."""
        parsed = await self.pipeline.parse(text)
        refusal = None
        if isinstance(parsed, ParseError):
            refusal = parse_error_text(parsed)
            await self.store.audit("parse", actor=user, result="refused", detail=f"{parsed.kind}: {text[:200]}")
        else:
            hosts_with_model = [n for n, h in self.pipeline.inventory().hosts.items() if parsed.model in h.models]
            why = request_refusal(self.config, parsed, user, channel, hosts_with_model)
            if why is not None:
                refusal = f"🚫 {escape_keeping_mentions(why)}"
                await self.store.audit(parsed.action, actor=user, host=parsed.host, result="refused",
                                       detail=f"not authorized in {channel}: {why}")
        if refusal is None:
            assert isinstance(parsed, DeployRequest)
            await self._deploy(parsed, text, user, channel, response_url, received)
        elif response_url:
            await AsyncRespond(response_url=response_url)(text=refusal, response_type="ephemeral",
                                                          replace_original=False)

    async def _deploy(self, request: DeployRequest, text: str, user: str, channel: str,
                      response_url: str | None, received: float | None = None) -> None:
        thread = self.surface.thread(channel, requested_at=received)
        self.pipeline.probe_early(request)  # the host is probed while the parent and status messages are posted
        try:
            await thread.start(parent_text(user, text))
        except SlackApiError as exc:
            error = exc.response.get("error")
            log.warning("cannot post in %s: %s", channel, error)
            if response_url:
                hint = " Invite me first: `/invite @deploybot`." if error in ("not_in_channel", "channel_not_found") else ""
                await AsyncRespond(response_url=response_url)(
                    text=f"I could not post in this channel ({error}), so nothing was started.{hint}",
                    response_type="ephemeral", replace_original=False)
            return
        who = Requester(user, thread.channel, thread.thread_ts)
        told = Told(thread, self.store, self.surface.acks)
        await self.surface.run(thread, self.pipeline.handle_request(request, told, who,
                                                                    until_ready=self.until_ready))
