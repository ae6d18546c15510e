"""App Home: each host with its GPUs used/free and its deployments (with links to their threads). The values are
gathered by handlers.slack.home; this module only renders them."""

from __future__ import annotations

import re
from datetime import datetime

from pydantic import Field
from slack_sdk.models.blocks import Block, DividerBlock, HeaderBlock, PlainTextObject
from slack_sdk.models.views import View

from bot.models import GIB, DeploymentState, EngineName, Frozen, GpuInfo
from handlers.slack.blocks.mrkdwn import (
    MAX_SECTION_TEXT,
    MAX_VIEW_BLOCKS,
    clip,
    context,
    escape,
    gib,
    mention,
    plural,
    section,
    utc_time,
)

#: A GPU with more memory in use than this holds something (the driver alone takes a few hundred MiB).
GPU_BUSY_BYTES = 1 * GIB


class DeploymentSummary(Frozen):
    id: str
    model: str
    engine: EngineName
    port: int
    state: DeploymentState
    where: str | None = None  # the backend's handle label: "PID 4242", "job 1234"
    endpoint: str | None = None
    requested_by: str | None = None
    thread_url: str | None = None  # chat.getPermalink of the deployment's thread
    live: str | None = None  # a ready server's figures from its engine's /metrics (or why there are none)


class HostSummary(Frozen):
    name: str
    address: str | None = None
    gpus: list[GpuInfo] = Field(default_factory=list)
    deployments: list[DeploymentSummary] = Field(default_factory=list)
    error: str | None = None  # why the host could not be probed
    checked_at: datetime | None = None


_SAFE_URL = re.compile(r"^https?://[^\s|<>]+$")


def _link(url: str | None, label: str) -> str:
    if url and _SAFE_URL.match(url):
        return f"<{url.replace('&', '&amp;')}|{escape(label)}>"
    return ""


def _host_section(host: HostSummary) -> str:
    title = f"🖥️ *{escape(host.name)}*" + (f"  `{escape(host.address)}`" if host.address else "")
    if host.error:
        return f"{title}\n⚠️ {escape(clip(host.error, 500))}"
    if not host.gpus:
        return f"{title}\nno GPU seen"
    busy = {g.index for g in host.gpus if g.memory_used_bytes > GPU_BUSY_BYTES}
    lines = [f"{title}\n{len(busy)} of {plural(len(host.gpus), 'GPU')} in use, {len(host.gpus) - len(busy)} free"]
    for gpu in host.gpus[:16]:
        mark = "🟥" if gpu.index in busy else "🟩"
        lines.append(
            f"{mark} GPU{gpu.index} {escape(gpu.name)}: {gib(gpu.memory_used_bytes)} / {gib(gpu.memory_total_bytes)} used"
        )
    if len(host.gpus) > 16:
        lines.append(f"… {len(host.gpus) - 16} more GPUs")
    if host.checked_at:
        lines.append(f"_checked {utc_time(host.checked_at)}_")
    return "\n".join(lines)


def _deployments_section(host: HostSummary) -> str:
    if not host.deployments:
        return "_no deployments_"
    rows = []
    for dep in host.deployments:
        row = f"• *{escape(dep.model)}* {dep.engine} :{dep.port} — {dep.state}"
        if dep.where:
            row += f" · {escape(dep.where)}"
        if dep.endpoint:
            row += f" · {escape(dep.endpoint)}"
        if dep.requested_by:
            row += f" · by {mention(dep.requested_by)}"
        link = _link(dep.thread_url, "thread")
        if link:
            row += f" · {link}"
        if dep.live:
            row += f"\n    📈 {escape(clip(dep.live, 300))}"
        rows.append(row)
    return _fit_rows(rows)


def _fit_rows(rows: list[str]) -> str:
    out: list[str] = []
    used = 0
    for index, row in enumerate(rows):
        if used + len(row) + 1 > MAX_SECTION_TEXT - 40:
            out.append(f"… {len(rows) - index} more")
            break
        out.append(row)
        used += len(row) + 1
    return "\n".join(out)


def home_view(hosts: list[HostSummary]) -> View:
    """App Home: each host with its GPUs used/free and its deployments (with links to their threads)."""
    blocks: list[Block] = [
        HeaderBlock(text=PlainTextObject(text="deploybot")),
        context("Start a server with `/deploy MODEL on HOST`; `/deploy help` shows more."),
    ]
    per_host = 3
    room = (MAX_VIEW_BLOCKS - len(blocks) - 1) // per_host
    for host in hosts[:room]:
        blocks += [DividerBlock(), section(_host_section(host)), section(_deployments_section(host))]
    if len(hosts) > room:
        blocks.append(context(f"… {plural(len(hosts) - room, 'more host')} not shown"))
    if not hosts:
        blocks.append(section("_no hosts configured (app.yaml)_"))
    return View(type="home", blocks=blocks)
