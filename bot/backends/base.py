"""The Backend protocol: how and where a deployment runs, behind one seam.

A backend probes a host, launches a plan and answers with a neutral handle (bot/handles.py), watches the running
server as one stream of typed happenings, stops it (and confirms it is gone), and reads the end of its log. The
pipeline and the follower speak only this protocol; what a PID, a log path, an exit file or a Slurm job id is stays
inside the backend that made the handle.

Adding a backend: one module with a class that satisfies `Backend`, its handle in bot/handles.py (or reuse one),
its settings in bot/config.py's `BackendSettings` when it has any, and one line in bot/backends/registry.py.
"""

from __future__ import annotations

import json

from collections.abc import AsyncIterator
from typing import Literal, Protocol, Union, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from bot.handles import DeploymentHandle, Handle
from bot.models import HostFacts, LaunchPlan
from bot.remote import RemoteError


class _Value(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# ------------------------------------------------------------------------------------------ what watch yields


class LogLine(_Value):
    """One complete line of the server's log; ``offset`` is the byte just after it (resume there)."""

    kind: Literal["log"] = "log"
    text: str
    offset: int


class Health(_Value):
    """The server's health endpoint changed: its HTTP status, 0 when nothing answers."""

    kind: Literal["health"] = "health"
    status: int


class Queued(_Value):
    """Waiting for resources before the server can start (a Slurm job pending); the reason as the scheduler says."""

    kind: Literal["queued"] = "queued"
    reason: str


class Exited(_Value):
    """The server is gone; its exit code when the backend could learn it."""

    kind: Literal["exited"] = "exited"
    code: int | None = None


class Heartbeat(_Value):
    """Nothing happened for a while and the link is alive: the follower flushes its excerpts and re-checks its
    clocks (ready on /health alone after a grace period, the ready timeout) even while the log is silent."""

    kind: Literal["heartbeat"] = "heartbeat"


WatchEvent = Union[LogLine, Health, Queued, Exited, Heartbeat]


def watch_event(raw: str) -> WatchEvent | None:
    """One JSON line of an agent's watch stream (bot/agents/follow_agent.py, slurm_agent.py) as a watch event:
    {"t": "log", "l": text, "o": offset} | {"t": "health", "s": status} | {"t": "queued", "reason": ...} |
    {"t": "exit", "code": n} | {"t": "hb"} (or "running": alive, nothing new); anything else: None."""
    try:
        message = json.loads(raw)
    except json.JSONDecodeError:
        return None
    kind = message.get("t") if isinstance(message, dict) else None
    if kind == "log":
        return LogLine(text=message["l"], offset=int(message["o"]))
    if kind == "queued":
        return Queued(reason=str(message.get("reason") or "waiting"))
    if kind == "health":
        return Health(status=int(message.get("s") or 0))
    if kind == "exit":
        return Exited(code=message.get("code"))
    if kind in ("hb", "running"):
        return Heartbeat()
    return None


# ------------------------------------------------------------------------------------------ what the calls answer


class LaunchFailed(RemoteError):
    """The backend refused or could not start the plan (busy key, engine did not start); the message says why."""


class Launch(_Value):
    """The answer of `Backend.launch`: the handle and where in its log the watch starts."""

    handle: DeploymentHandle
    #: The log's size before this launch (an appended log is watched from here); ignored when already_launched.
    log_offset: int = 0
    #: The same deployment was launched before (a retry, a bot restarted mid-launch): nothing new was started.
    already_launched: bool = False
    #: ... and it is still running.
    already_running: bool = False


class StopReport(_Value):
    """The answer of `Backend.stop`, confirmed by the backend (not only "the signal was sent")."""

    #: The server is gone (it was stopped, or was not running).
    stopped: bool
    was_running: bool = False
    #: It outlived the grace period and was killed.
    killed: bool = False
    #: What still holds resources after the stop, in words (empty when the stop is confirmed complete).
    holders: list[str] = Field(default_factory=list)
    #: Memory still used on each GPU of the host after the stop (bytes by GPU index), when the backend saw it.
    gpu_used_bytes: dict[int, int] = Field(default_factory=dict)

    @property
    def confirmed(self) -> bool:
        return self.stopped and not self.holders


# ------------------------------------------------------------------------------------------ the protocol


@runtime_checkable
class Backend(Protocol):
    """One host's way of running deployments. Every call is one round trip (watch: one long stream)."""

    #: The `kind` app.yaml names it by (`backend: process`).
    kind: str
    #: The host's name in app.yaml.
    host: str

    async def probe(
        self, *, model: str | None = None, draft_model: str | None = None, drafters: bool = False
    ) -> HostFacts:
        """What the planner needs: GPUs, processes, ports, models, engines; with ``drafters`` (or a named
        ``draft_model``) also the drafter folders a speculative plan may use (HostFacts.drafters)."""
        ...

    async def engine_help(self, engines: list[str]) -> dict[str, str]:
        """Each named engine's `--help` text (slow: callers cache it per version)."""
        ...

    async def launch(self, plan: LaunchPlan, deployment_id: str) -> Launch:
        """Start the plan detached, idempotently by deployment id (a repeat returns the first launch)."""
        ...

    def watch(self, handle: Handle, *, offset: int) -> AsyncIterator[WatchEvent]:
        """Log lines from byte ``offset``, health changes, queue states, and Exited at the end. A stream that ends
        without Exited (or raises RemoteError) lost its link: watch again from the last offset."""
        ...

    async def stop(self, handle: Handle, *, grace_s: float) -> StopReport:
        """Stop gracefully, kill after ``grace_s``, and confirm the resources are free."""
        ...

    async def tail(self, handle: Handle, max_bytes: int) -> str:
        """The last ``max_bytes`` of the log, from a line boundary (never the whole file)."""
        ...
