"""App Home: the fleet at a glance (hosts, GPUs used/free from a fresh probe, running deployments with links to
their threads), published with views.publish when someone opens the app's Home tab."""

from __future__ import annotations

import asyncio
import logging

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.engine_figures import EngineFigures, figures_line, ready_figures
from bot.models import Deployment, utcnow
from bot.pipeline import Pipeline
from bot.remote import RemoteError
from handlers.slack.blocks.home import DeploymentSummary, HostSummary, home_view

log = logging.getLogger(__name__)

#: A host that does not answer within this is shown as unreachable: the Home tab must not hang on one bad host.
PROBE_TIMEOUT_S = 20.0


async def _thread_link(client: AsyncWebClient, dep: Deployment) -> str | None:
    if not (dep.channel and dep.thread_ts):
        return None  # started from the terminal: no thread to link to
    try:
        response = await client.chat_getPermalink(channel=dep.channel, message_ts=dep.thread_ts)
    except SlackApiError as exc:
        log.info("no permalink for %s's thread: %s", dep.id, exc.response.get("error"))
        return None
    return response.get("permalink")


async def _deployment_summary(pipeline: Pipeline, client: AsyncWebClient, dep: Deployment,
                              figures: EngineFigures | str | None = None) -> DeploymentSummary:
    live = None if figures is None else figures_line(figures).replace("\n    ", " · ")
    endpoint = None
    if dep.state == "ready":
        endpoint = f"http://{pipeline.host_config(dep.host).address}:{dep.port}"
    return DeploymentSummary(id=dep.id, model=dep.model, engine=dep.engine, port=dep.port, state=dep.state,
                             where=dep.handle.label if dep.handle else None, endpoint=endpoint, requested_by=dep.requested_by,
                             thread_url=await _thread_link(client, dep), live=live)


async def host_summary(pipeline: Pipeline, client: AsyncWebClient, name: str, *,
                       probe_timeout_s: float = PROBE_TIMEOUT_S) -> HostSummary:
    host = pipeline.host_config(name)
    error: str | None = None
    gpus = []
    active = await pipeline.store.active_deployments(name)
    # The engines' figures are read while the host is probed (read_figures says its own errors).
    live = asyncio.ensure_future(asyncio.wait_for(ready_figures(pipeline.remotes.get(name), host.python, active),
                                                  probe_timeout_s))
    try:
        # Through the host's backend (a process host's probe agent, a Slurm login node's sinfo), as the pipeline.
        facts = await asyncio.wait_for(pipeline.backend(name).probe(), probe_timeout_s)
        gpus = facts.gpus
    except RemoteError as exc:
        error = pipeline.redact(str(exc))
    except asyncio.TimeoutError:
        error = f"no answer within {probe_timeout_s:.0f} s"
    try:
        figures = await live
    except asyncio.TimeoutError:
        figures = {}
    deployments = [await _deployment_summary(pipeline, client, dep, figures.get(dep.id)) for dep in active]
    return HostSummary(name=name, address=host.address, gpus=gpus, deployments=deployments, error=error,
                       checked_at=utcnow())


async def fleet(pipeline: Pipeline, client: AsyncWebClient, *,
                probe_timeout_s: float = PROBE_TIMEOUT_S) -> list[HostSummary]:
    """Every configured host, probed at the same time."""
    return list(await asyncio.gather(*(host_summary(pipeline, client, name, probe_timeout_s=probe_timeout_s)
                                       for name in pipeline.config.hosts)))


async def publish_home(pipeline: Pipeline, client: AsyncWebClient, user_id: str) -> None:
    await client.views_publish(user_id=user_id, view=home_view(await fleet(pipeline, client)))
