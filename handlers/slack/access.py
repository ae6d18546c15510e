"""Who may act on which host from where: `hosts.<name>.allowed_users` / `allowed_channels` in app.yaml, checked
before a request or a thread command runs (the refusal says which setting refused it)."""

from __future__ import annotations

from bot.config import AppConfig
from bot.mentions import mention_channel
from bot.models import DeployRequest


def host_refusal(config: AppConfig, host: str, user: str, channel: str | None) -> str | None:
    """Why this user, in this channel, may not act on `host` (hosts.<name>.allowed_users / allowed_channels)."""
    cfg = config.hosts.get(host)
    if cfg is None:
        return None  # the parser only returns inventory hosts; an unknown one fails later with its own message
    if cfg.allowed_users and user not in cfg.allowed_users:
        return f"you are not allowed to use {host} (hosts.{host}.allowed_users in app.yaml)"
    if cfg.allowed_channels and channel not in cfg.allowed_channels:
        where = ", ".join(mention_channel(c) for c in cfg.allowed_channels)
        return f"{host} takes requests only in {where} (hosts.{host}.allowed_channels in app.yaml)"
    return None


def request_refusal(config: AppConfig, request: DeployRequest, user: str, channel: str | None,
                    hosts_with_model: list[str]) -> str | None:
    """Why this request may not run for this user here, or None. A request without a host may reach several hosts:
    it is refused when any of them refuses the user, saying which hosts the user may name instead."""
    if request.host is not None:
        return host_refusal(config, request.host, user, channel)
    if request.action == "status":
        return None  # the overview of all hosts changes nothing
    scope = hosts_with_model if request.action == "start" else list(config.hosts)
    refused = {h: why for h in scope if (why := host_refusal(config, h, user, channel)) is not None}
    if not refused:
        return None
    allowed = [h for h in scope if h not in refused]
    hint = f"; name a host you may use: {', '.join(allowed)}" if allowed else ""
    return next(iter(refused.values())) + hint

