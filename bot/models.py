"""Domain values that cross every boundary of the pipeline.

text -parse-> DeployRequest -probe-> HostFacts -plan-> LaunchPlan -launch-> Deployment -follow-> events.

They are pydantic models (frozen where they can be) so that the probe's JSON, store rows and Slack button
values round-trip through ``model_dump_json`` / ``model_validate_json`` unchanged.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.handles import DeploymentHandle
from bot.model_base import GIB, EngineName, Frozen, utcnow
# (the probe's facts live in bot/host_facts.py; named here too, as every boundary imports them from here)
from bot.host_facts import (EngineInstall, GpuInfo, GpuProcess, HostFacts, ModelFolder, ModelLocation,  # noqa: F401
                            ServerInfo)

Action = Literal["start", "stop", "restart", "status", "logs"]
#: How a server speculates: the model's own MTP heads, a separate drafter (an EAGLE-3 head, a DFlash block-diffusion
#: drafter, a standalone draft model), n-gram lookup, or not at all. "drafter" is a request's "with our drafter":
#: a drafter of whatever kind its config says, resolved to one of the three when the plan is made.
Speculative = Literal["mtp", "eagle3", "dflash", "draft", "ngram", "none", "drafter"]
#: The kinds that need a drafter folder (``draft_model``).
DRAFTER_KINDS: tuple[str, ...] = ("eagle3", "dflash", "draft", "drafter")

#: Fields of a request that ``deploybot parse --json`` prints, in this order.
PUBLIC_REQUEST_FIELDS: tuple[str, ...] = (
    "action",
    "model",
    "host",
    "engine",
    "speculative",
    "draft_model",
    "tp",
    "port",
    "quantization",
    "context_length",
    "gpus",
)


# --------------------------------------------------------------------------------------------- request


class DeployRequest(Frozen):
    """What a person asked for, resolved against the inventory: only inventory names and validated numbers."""

    action: Action
    model: str | None = None
    host: str | None = None
    engine: EngineName | None = None
    speculative: Speculative | None = None
    #: The drafter's folder (a model name on the host), when the request named one.
    draft_model: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$")
    tp: int | None = Field(default=None, ge=1, le=64)
    port: int | None = Field(default=None, ge=1024, le=65535)
    quantization: str | None = Field(default=None, pattern=r"^[a-z0-9_]{2,24}$")
    context_length: int | None = Field(default=None, ge=1, le=10_000_000)
    gpus: list[int] | None = None
    #: "same as before": reuse the last successful plan of this model on this host.
    reuse_last: bool = False
    #: Phrases of the request that were read but not acted on, quoted as written; the reply names them.
    ignored: list[str] = Field(default_factory=list)

    def public(self) -> dict[str, object]:
        """The request exactly as `deploybot parse --json` shows it (null when absent)."""
        return {name: getattr(self, name) for name in PUBLIC_REQUEST_FIELDS}

    def summary(self) -> str:
        parts: list[str] = [self.action]
        if self.model:
            parts.append(self.model)
        if self.host:
            parts.append(f"on {self.host}")
        extras = []
        for name in ("engine", "speculative", "draft_model", "tp", "port", "quantization", "context_length", "gpus"):
            value = getattr(self, name)
            if value is not None:
                extras.append(f"{name}={value}")
        if self.reuse_last:
            extras.append("same as last time")
        if extras:
            parts.append("(" + ", ".join(extras) + ")")
        if self.ignored:
            parts.append("· I ignored: " + ", ".join(repr(p) for p in self.ignored))
        return " ".join(parts)


ParseErrorKind = Literal[
    "unknown_host",
    "unknown_model",
    "ambiguous_model",
    "missing_model",
    "not_on_host",
    "unsafe_input",
    "invalid_value",
    "not_understood",
]


class ParseError(Frozen):
    """A request we will not act on, with a message a person understands and what they could write instead."""

    kind: ParseErrorKind
    message: str
    suggestions: list[str] = Field(default_factory=list)


# --------------------------------------------------------------------------------------------- plan


class PlanOverrides(Frozen):
    """Changes to a plan that a person or the diagnoser asks for; the planner re-plans with them."""

    tp: int | None = None
    gpus: list[int] | None = None
    port: int | None = None
    engine: EngineName | None = None
    speculative: Speculative | None = None
    context_length: int | None = None
    mem_fraction: float | None = Field(default=None, gt=0, le=1)
    cuda_graph_max_bs: int | None = None
    disable_cuda_graph: bool | None = None
    max_running_requests: int | None = None
    kv_cache_dtype: str | None = None
    quantization: str | None = None
    extra_args: list[str] = Field(default_factory=list)
    remove_args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)

    def is_empty(self) -> bool:
        return self == PlanOverrides()


class Risk(Frozen):
    code: str  # "thin_margin", "shared_gpu", "old_engine", "silent_rewrite", ...
    message: str  # with its reason and its number
    severity: Literal["info", "warning", "blocker"] = "warning"


class GpuBudget(Frozen):
    gpu_index: int
    total_bytes: int
    free_bytes: int
    weights_bytes: int
    overhead_bytes: int
    kv_bytes: int
    kv_tokens: int
    margin_bytes: int


class LaunchPlan(Frozen):
    host: str
    model: str
    model_path: str
    engine: EngineName
    engine_version: str | None = None
    tp: int
    gpus: list[int]
    port: int
    argv: list[str]
    env: dict[str, str] = Field(default_factory=dict)
    speculative: Speculative = "none"
    #: The drafter (name and path as launched) and what its weights add, all ranks together (0 without one).
    draft_model: str | None = None
    draft_model_path: str | None = None
    draft_weights_bytes: int = 0
    context_length: int | None = None
    mem_fraction: float | None = None
    weights_bytes: int
    kv_bytes_per_token: int
    per_gpu: list[GpuBudget] = Field(default_factory=list)
    fits: bool = True
    risks: list[Risk] = Field(default_factory=list)
    reasons: list[str] = Field(default_factory=list)
    overrides: PlanOverrides = Field(default_factory=PlanOverrides)

    def plan_hash(self) -> str:
        """Identity of what would run: an approval is bound to it."""
        material = json.dumps(
            {"host": self.host, "argv": self.argv, "env": dict(sorted(self.env.items())), "gpus": self.gpus},
            sort_keys=True,
        )
        return hashlib.sha256(material.encode()).hexdigest()[:16]

    @property
    def deployment_key(self) -> str:
        """Stable name of this deployment on its host (one server per model and port)."""
        safe_model = "".join(c if c.isalnum() or c in "-._" else "_" for c in self.model)
        return f"{safe_model}-{self.port}"


class PlanFailure(Frozen):
    """A plan that cannot work: why, with numbers, and the nearest plan that would."""

    reason: str
    details: list[str] = Field(default_factory=list)
    nearest: str | None = None
    weights_bytes: int | None = None
    risks: list[Risk] = Field(default_factory=list)


# --------------------------------------------------------------------------------------------- diagnosis


class EvidenceLine(Frozen):
    line: int  # 1-based line number within the tail that was read
    text: str


class Fix(Frozen):
    summary: str
    overrides: PlanOverrides


#: The crash categories of tests/data/corpus/TAXONOMY.md (copied from shared/corpus/TAXONOMY.md): the ids a
#: diagnosis names and app.yaml's `policy.auto_fix` may list.
CRASH_CATEGORIES: tuple[str, ...] = (
    "gpu_oom_weights", "kv_cache_insufficient", "cuda_graph_oom", "unsupported_architecture", "transformers_too_old",
    "missing_dependency", "port_in_use", "tp_not_divisible", "nccl_error", "cuda_arch_or_driver",
    "speculative_config_invalid", "model_files_missing_or_corrupt", "hub_access", "bad_argument",
    "quantization_unsupported", "host_oom_killed", "jit_compile_failure", "time_limit", "preemption", "cgroup_oom",
    "other",
)


class Diagnosis(Frozen):
    category: str  # ids of shared/corpus/TAXONOMY.md, "none" for healthy, "other" when unrecognised
    cause: str
    evidence: list[EvidenceLine] = Field(default_factory=list)
    next_steps: list[str] = Field(default_factory=list)
    confidence: float = Field(default=0.5, ge=0, le=1)
    fix: Fix | None = None
    #: A low-confidence verdict names the other categories it is unsure between (best first); empty when sure.
    alternatives: list[str] = Field(default_factory=list)


# --------------------------------------------------------------------------------------------- deployment

DeploymentState = Literal["planned", "launching", "starting", "ready", "stopping", "crashed", "stopped", "failed"]


class PendingRestart(Frozen):
    """A restart policy.restart_on_crash has planned after a death in service and not launched yet: stored on the
    crashed deployment so that a bot killed during the back-off resumes it on start-up (and a `stop` cancels it)."""

    #: When the back-off ends and the restart is launched.
    due_at: datetime
    #: When the policy planned it (told on resume).
    planned_at: datetime
    #: The crash's category, for the thread and the audit trail.
    category: str
    #: The diagnoser's fix to restart with (policy.auto_fix allowed its category); None: the same plan.
    fix: PlanOverrides | None = None

    def how(self) -> str:
        return f"with the fix for {self.category}" if self.fix is not None else "with the same plan"


class HealingChain(Frozen):
    """What a request's relaunches have done so far (issue 17), carried from each deployment to the next, so the
    policy's limits hold across fixes and a bot restart (it is stored with the deployment)."""

    #: The first deployment of the request.
    root_id: str | None = None
    #: Hashes of every plan launched in the chain: a fix that gives one of them again is no fix.
    tried_plans: list[str] = Field(default_factory=list)
    #: Relaunches made by policy.auto_fix without an approval.
    auto_relaunches: int = 0
    #: When each restart after a death in service happened (policy.restart_on_crash, limited per hour).
    restarts: list[datetime] = Field(default_factory=list)
    #: A restart due and not launched yet (on the crashed deployment only; cleared when it launches or is cancelled).
    pending_restart: PendingRestart | None = None


class Deployment(BaseModel):
    """A launched (or about to be launched) server; the store's row."""

    model_config = ConfigDict(extra="forbid")

    id: str
    host: str
    model: str
    engine: EngineName
    port: int
    plan: LaunchPlan
    state: DeploymentState = "planned"
    #: Where it runs, as its backend named it (None until launched): a detached process, a Slurm job...
    handle: DeploymentHandle | None = None
    #: How far its log was read and posted (a restarted bot resumes the backend's watch there).
    log_offset: int = 0
    requested_by: str | None = None
    channel: str | None = None
    thread_ts: str | None = None
    status_ts: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    ready_at: datetime | None = None
    exit_code: int | None = None
    diagnosis: Diagnosis | None = None
    chain: HealingChain = Field(default_factory=HealingChain)
