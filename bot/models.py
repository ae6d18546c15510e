"""Domain values that cross every boundary of the pipeline.

text -parse-> DeployRequest -probe-> HostFacts -plan-> LaunchPlan -launch-> Deployment -follow-> events.

They are pydantic models (frozen where they can be) so that the probe's JSON, store rows and Slack button
values round-trip through ``model_dump_json`` / ``model_validate_json`` unchanged.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from bot.handles import DeploymentHandle

Action = Literal["start", "stop", "restart", "status", "logs"]


def _registered_engine(name: str) -> str:
    # the set of engines is the registry's (planners/engines/registry.py); imported here, at validation time,
    # because the engine packages import this module
    from planners.engines.registry import validate_name  # noqa: PLC0415

    return validate_name(name)


#: An engine's name: any engine in planners/engines/registry.py.
EngineName = Annotated[str, AfterValidator(_registered_engine)]
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


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


#: Bytes in a GiB: defined once here, for every module that shows or plans memory.
GIB = 1 << 30

class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


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


# --------------------------------------------------------------------------------------------- host facts


class GpuInfo(Frozen):
    index: int
    name: str
    uuid: str | None = None
    memory_total_bytes: int
    memory_used_bytes: int
    memory_free_bytes: int
    compute_capability: str | None = None  # "8.6"
    utilization_pct: int | None = None
    pci_bus_id: str | None = None


class ServerInfo(Frozen):
    """A running inference server recognised from a process command line."""

    engine: EngineName
    model_path: str | None = None
    port: int | None = None
    tp: int | None = None


class GpuProcess(Frozen):
    pid: int
    gpu_index: int | None = None
    gpu_uuid: str | None = None
    used_bytes: int | None = None
    name: str | None = None
    cmdline: str | None = None
    user: str | None = None
    started_at: float | None = None  # unix time
    server: ServerInfo | None = None


class ModelFolder(Frozen):
    name: str
    path: str  # what the engine is launched with: the folder, or the hub cache snapshot folder
    exists: bool
    source: Literal["folder", "hf_cache"] = "folder"
    repo: str | None = None  # ORG/NAME of a hub cache model
    revision: str | None = None  # the snapshot's commit (the one refs/main names)
    config: dict | None = None  # config.json as read (nested text_config kept as is)
    config_error: str | None = None
    index_total_size: int | None = None  # model.safetensors.index.json metadata.total_size
    shard_bytes: int = 0  # sum of *.safetensors file sizes (apparent size)
    shard_count: int = 0
    has_custom_code: bool = False  # *.py files next to the config (auto_map)


class ModelLocation(Frozen):
    """Where the probe found one model: a plain folder, or a Hugging Face hub cache snapshot."""

    name: str
    path: str
    source: Literal["folder", "hf_cache"] = "folder"
    repo: str | None = None  # ORG/NAME (hub cache), or ORG/NAME of a nested plain folder
    revision: str | None = None


class EngineInstall(Frozen):
    name: EngineName
    version: str | None = None
    error: str | None = None  # why it could not be imported, when present but broken


class HostFacts(Frozen):
    """Everything the planner needs about a host, gathered by ONE probe round trip."""

    host: str
    hostname: str | None = None
    home: str | None = None  # the deploy user's home on the host (host paths with ~ are expanded there)
    probed_at: datetime = Field(default_factory=utcnow)
    gpu_source: Literal["nvml", "nvidia-smi", "slurm", "none"] = "none"
    gpu_error: str | None = None
    driver_version: str | None = None
    cuda_version: str | None = None
    gpus: list[GpuInfo] = Field(default_factory=list)
    gpu_processes: list[GpuProcess] = Field(default_factory=list)
    p2p: dict[str, str] = Field(default_factory=dict)  # "0-1" -> "ok" | "not supported" ...
    listening_ports: list[int] = Field(default_factory=list)
    model: ModelFolder | None = None
    #: Drafter folders the probe read fully: the one a request named, and every folder whose config is a drafter's
    #: (DFlash / EAGLE-3) or that app.yaml lists as a drafter of the model asked for.
    drafters: list[ModelFolder] = Field(default_factory=list)
    #: Folders whose config is a dedicated drafter's (DFlash, EAGLE-3), from every probe: not models to serve.
    drafter_names: list[str] = Field(default_factory=list)
    models_available: list[str] = Field(default_factory=list)
    model_locations: list[ModelLocation] = Field(default_factory=list)
    engines: dict[str, EngineInstall] = Field(default_factory=dict)
    engine_help: dict[str, str] = Field(default_factory=dict)  # engine -> `--help` text (only when asked for)
    python_version: str | None = None
    disk_free_bytes: int | None = None
    ram_total_bytes: int | None = None
    ram_available_bytes: int | None = None

    def gpu(self, index: int) -> GpuInfo | None:
        return next((g for g in self.gpus if g.index == index), None)

    def processes_on(self, index: int) -> list[GpuProcess]:
        gpu = self.gpu(index)
        return [
            p
            for p in self.gpu_processes
            if p.gpu_index == index or (gpu is not None and gpu.uuid and p.gpu_uuid == gpu.uuid)
        ]


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
