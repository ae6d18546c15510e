"""Domain events the pipeline emits, and the Thread protocol each chat surface implements.

The pipeline never talks to Slack or the terminal: it emits these, and a Thread renders them its own way.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal, Protocol, Union

from pydantic import Field

from bot.handles import DeploymentHandle
from bot.models import DeployRequest, Diagnosis, Frozen, HostFacts, LaunchPlan, ParseError, PlanFailure

Step = Literal["parse", "probe", "plan", "approve", "launch", "ready", "stop"]


class Parsed(Frozen):
    kind: Literal["parsed"] = "parsed"
    request: DeployRequest
    note: str | None = None  # e.g. "reusing the plan of 2026-11-29 (deployment abc)"


class ParseFailed(Frozen):
    kind: Literal["parse_failed"] = "parse_failed"
    error: ParseError


class Probed(Frozen):
    kind: Literal["probed"] = "probed"
    facts: HostFacts
    seconds: float


class Planned(Frozen):
    kind: Literal["planned"] = "planned"
    plan: LaunchPlan


class PlanRejected(Frozen):
    kind: Literal["plan_rejected"] = "plan_rejected"
    failure: PlanFailure


class Launched(Frozen):
    kind: Literal["launched"] = "launched"
    deployment_id: str
    handle: DeploymentHandle  # surfaces show handle.label ("PID 4242") and handle.log_path
    already_running: bool = False  # the launch record said it was launched before: nothing new started


class LogExcerpt(Frozen):
    kind: Literal["log_excerpt"] = "log_excerpt"
    lines: list[str]
    omitted: int = 0  # lines cut from this excerpt to keep it short
    #: The answer to a person's `logs N` (not the follower's running excerpt): posted at once, always, and worded so
    #: the thread tells the two apart.
    requested: bool = False


class Ready(Frozen):
    kind: Literal["ready"] = "ready"
    endpoint: str
    seconds: float
    kv_tokens: int | None = None
    measured: str | None = None  # "planned 25.9 GiB weights + 14.1 GiB KV per GPU; measured 41.2 GiB used"


class Crashed(Frozen):
    kind: Literal["crashed"] = "crashed"
    exit_code: int | None = None
    tail: list[str] = Field(default_factory=list)
    #: Seconds it served after ready, when it died in service (None: it never became ready).
    served_s: float | None = None

    def stopped_text(self) -> str:
        """'the server stopped (exit code 1)', or for a death in service 'crashed after 3 h 12 min of service
        (exit 137)'."""
        if self.served_s is None:
            code = f"exit code {self.exit_code}" if self.exit_code is not None else "exit code unknown"
            return f"the server stopped ({code})"
        code = f"exit {self.exit_code}" if self.exit_code is not None else "exit code unknown"
        return f"crashed after {service_time(self.served_s)} of service ({code})"


def service_time(seconds: float) -> str:
    """3 h 12 min, 4 min 10 s, 12 s: how long a server served, as people say it."""
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"


class Diagnosed(Frozen):
    kind: Literal["diagnosed"] = "diagnosed"
    diagnosis: Diagnosis


class Stopped(Frozen):
    kind: Literal["stopped"] = "stopped"
    deployment_id: str
    message: str


class ApprovalRequested(Frozen):
    """A risky action waits for an approver; the surface shows what would run and Approve/Deny."""

    kind: Literal["approval_requested"] = "approval_requested"
    approval_id: str
    action: Literal["launch", "relaunch", "stop"]
    title: str
    reasons: list[str]
    plan: LaunchPlan | None = None
    previous_argv: list[str] | None = None  # for a relaunch: what ran before (the surface shows the diff)
    requested_by: str | None = None
    expires_at: datetime


class ApprovalDecided(Frozen):
    kind: Literal["approval_decided"] = "approval_decided"
    approval_id: str
    decision: Literal["approved", "denied", "expired", "superseded"]
    decided_by: str | None = None
    decided_at: datetime
    note: str | None = None


class EngineLoad(Frozen):
    """A ready server's live figures from its engine's own /metrics (the status message shows the latest)."""

    kind: Literal["engine_load"] = "engine_load"
    summary: str  # "3 running, 0 queued, KV cache 12%, 41.0 tok/s, spec accept 71%"
    trouble: str | None = None  # "5 requests wait and the engine generates nothing (0 tok/s)"


class Info(Frozen):
    kind: Literal["info"] = "info"
    message: str
    step: Step | None = None


class Failed(Frozen):
    """An error the user can act on that is not a parse or plan failure (host unreachable, refused, ...)."""

    kind: Literal["failed"] = "failed"
    message: str
    step: Step | None = None


Event = Annotated[
    Union[
        Parsed, ParseFailed, Probed, Planned, PlanRejected, Launched, LogExcerpt, Ready, Crashed, Diagnosed, Stopped,
        ApprovalRequested, ApprovalDecided, EngineLoad, Info, Failed,
    ],
    Field(discriminator="kind"),
]


class Thread(Protocol):
    """Where a deployment's story is told: a Slack thread, the terminal, a test recorder."""

    async def emit(self, event: Event) -> None: ...


class RecordingThread:
    """Keeps every event; used by tests and by surfaces that render afterwards."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    async def emit(self, event: Event) -> None:
        self.events.append(event)

    def of(self, kind: type) -> list:
        return [e for e in self.events if isinstance(e, kind)]
