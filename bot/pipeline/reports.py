"""What the operations surfaces call answer with: structured values (pydantic), never a surface's markup.

Each report carries the facts (user IDs as IDs, bytes as bytes) and a plain-text reading, `text()`, that the
pipeline tells its Thread; a person named in it is written with `bot.mentions.mention` (a mark each surface turns
into its own kind of mention, or into plain `@U…` on a terminal), never as Slack markup.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from bot.mentions import mention
from bot.models import GIB, Frozen
from bot.pipeline.types import age_of


class GpuUse(Frozen):
    index: int
    used_bytes: int
    total_bytes: int | None = None


class DeploymentRow(Frozen):
    """One deployment deploybot started, as status shows it."""

    id: str
    host: str
    model: str
    state: str
    port: int
    gpus: list[int]
    where: str | None = None  # the backend's handle label: "PID 4242", "job 1234"
    requested_by: str | None = None
    created_at: datetime
    live: str | None = None  # a ready server's figures from its engine's /metrics

    def lines(self) -> list[str]:
        span = (f"{self.gpus[0]}-{self.gpus[-1]}" if len(self.gpus) > 1 else str(self.gpus[0]) if self.gpus
                else "?")
        by = mention(self.requested_by) if self.requested_by else "the terminal"
        where = f", {self.where}" if self.where else ""
        rows = [f"  {self.host} GPU {span}: {self.model} ({self.state}, port {self.port}{where}), "
                f"started by {by} {age_of(self.created_at)} ago"]
        if self.live:
            rows.append(f"    {self.live}")
        return rows


class ForeignProcess(Frozen):
    """A process on a GPU that deploybot did not start (by hand, another tool, another user)."""

    gpu_index: int | None = None
    pid: int
    what: str
    user: str | None = None

    def line(self) -> str:
        return f"  GPU {self.gpu_index}: PID {self.pid} {self.what} (user {self.user or '?'}, not started by deploybot)"


class HostStatus(Frozen):
    name: str
    error: str | None = None  # why the host could not be probed
    gpus: list[GpuUse] = Field(default_factory=list)
    deployments: list[DeploymentRow] = Field(default_factory=list)
    others: list[ForeignProcess] = Field(default_factory=list)

    def lines(self) -> list[str]:
        if self.error is not None:
            return [f"{self.name}: unreachable ({self.error})"]
        gpus = ", ".join(f"GPU {g.index} {g.used_bytes / GIB:.1f}/{(g.total_bytes or 0) / GIB:.1f} GiB"
                         for g in self.gpus) or "no GPUs seen"
        rows = [f"{self.name}: {gpus}"]
        for dep in self.deployments:
            rows.extend(dep.lines())
        rows.extend(proc.line() for proc in self.others)
        return rows


class StatusReport(Frozen):
    hosts: list[HostStatus]

    def text(self) -> str:
        return "\n".join(line for host in self.hosts for line in host.lines())


class StopDone(Frozen):
    """One deployment's stop, as its backend confirmed it (or what still holds its resources)."""

    deployment_id: str
    host: str
    model: str
    port: int
    where: str | None = None
    stopped: bool
    confirmed: bool
    killed: bool = False
    holders: list[str] = Field(default_factory=list)
    gpus_after: list[GpuUse] = Field(default_factory=list)  # the deployment's GPUs once stopped

    def text(self) -> str:
        if not self.confirmed:
            return f"{self.model} on {self.host}: stop incomplete: " + "; ".join(self.holders)
        how = "killed after the grace period" if self.killed else "stopped cleanly"
        freed = ", ".join(f"GPU {g.index} {g.used_bytes / GIB:.1f} GiB used" for g in self.gpus_after)
        return (f"{self.model} on {self.host} ({self.where}) {how}; port {self.port} closed"
                + (f"; {freed}" if freed else ""))


class LogTail(Frozen):
    """The bounded end of a deployment's log, redacted; `error` when it could not be read, `has_log` False when the
    deployment has none yet (never launched)."""

    deployment_id: str
    model: str
    host: str
    text: str = ""
    has_log: bool = True
    error: str | None = None

    def last(self, lines: int) -> list[str]:
        return self.text.splitlines()[-lines:]

