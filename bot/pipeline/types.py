"""What the pipeline's entry points answer (Outcome), who asks (Requester), and small helpers they share."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Literal, Protocol

from bot.models import Deployment, DeployRequest, LaunchPlan, PlanOverrides

OutcomeState = Literal[
    "ready", "crashed", "lost", "rejected", "bad_request", "awaiting_approval", "denied", "stopped", "done", "failed",
]

#: Exit codes of `deploybot ask`: 0 ready (or done), 1 crashed / did not fit / failed, 2 bad request or config.
EXIT_CODES: dict[str, int] = {
    "ready": 0, "done": 0, "stopped": 0, "awaiting_approval": 0,
    "crashed": 1, "lost": 1, "rejected": 1, "failed": 1, "denied": 1,
    "bad_request": 2,
}


@dataclass
class Outcome:
    state: OutcomeState
    deployment: Deployment | None = None
    message: str | None = None

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.state]


@dataclass(frozen=True)
class Requester:
    """Who asked, and where the story is told (Slack channel and thread; None on the terminal)."""

    user: str | None = None
    channel: str | None = None
    thread_ts: str | None = None


class InteractiveApprover(Protocol):
    """A surface that can ask right now (the terminal's prompt); Slack uses stored approvals and buttons instead."""

    async def confirm(self, title: str, reasons: list[str], plan: LaunchPlan | None) -> bool: ...


def age_of(when: datetime) -> str:
    seconds = (datetime.now(timezone.utc) - when).total_seconds()
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} days"


def request_of(plan: LaunchPlan) -> DeployRequest:
    """The request that reproduces a plan (GPUs left to the planner: a fix may change the TP)."""
    return DeployRequest(action="start", model=plan.model, host=plan.host, engine=plan.engine,
                         speculative=plan.speculative, draft_model=plan.draft_model, tp=plan.tp, port=plan.port,
                         context_length=plan.overrides.context_length)


def merge_overrides(base: PlanOverrides, change: PlanOverrides) -> PlanOverrides:
    merged = base.model_dump()
    for key, value in change.model_dump().items():
        if value not in (None, [], {}):
            merged[key] = value
    return PlanOverrides.model_validate(merged)
