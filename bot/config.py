"""app.yaml (inventory and policies) and the secrets, which come from the environment only.

`--config PATH` or `DEPLOYBOT_CONFIG` selects the file. Validation errors name the bad key
(``hosts.CT129.port: Input should be a valid integer``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

HOST_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$"
#: Folder names of models: no separators that could escape models_dir, no shell metacharacters.
MODEL_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$"
#: A drafter folder outside models_dir (app.yaml ``drafters:``): an absolute path of plain name characters.
DRAFTER_PATH_PATTERN = r"^/[A-Za-z0-9._+/-]{1,400}$"


class ConfigError(Exception):
    """app.yaml is missing or invalid; the message names the bad key."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ProcessBackendSettings(Strict):
    """`backend: process` (the default): a detached process on the host, over SSH or locally (bot/backends/process.py).
    Its settings are the host's own (python, log_dir, transport): nothing more to say here yet."""

    kind: Literal["process"] = "process"


#: Partition, account, QoS and GRES type names: what Slurm accepts, and nothing a job script could misread.
SLURM_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$"
#: sbatch(1) --time: "minutes", "minutes:seconds", "hours:minutes:seconds", "days-hours", "days-hours:minutes",
#: "days-hours:minutes:seconds".
SLURM_TIME_PATTERN = r"^(\d{1,3}-\d{1,2}(:\d{1,2}){0,2}|\d{1,6}(:\d{1,2}){0,2})$"


class SlurmBackendSettings(Strict):
    """`backend: {kind: slurm, ...}`: each deployment is a batch job on a Slurm cluster (bot/backends/slurm.py). The
    host entry names the cluster's login node (reached over SSH like any host); `python`, `models_dir` and `log_dir`
    are paths on the storage the login node and the compute nodes share (the job's log is written there)."""

    kind: Literal["slurm"]
    partition: str = Field(pattern=SLURM_NAME_PATTERN)
    account: str | None = Field(default=None, pattern=SLURM_NAME_PATTERN)
    qos: str | None = Field(default=None, pattern=SLURM_NAME_PATTERN)
    #: The GRES type the jobs ask for (`--gres=gpu:TYPE:N`); none: any GPU of the partition (`--gres=gpu:N`).
    gres_type: str | None = Field(default=None, pattern=SLURM_NAME_PATTERN)
    #: sbatch --time; none: the partition's default. A job past it is ended by Slurm (diagnosed as time_limit).
    time_limit: str | None = Field(default=None, pattern=SLURM_TIME_PATTERN)
    #: sbatch --mem (host RAM for the job's memory cgroup, e.g. "64G"); none: the partition's default. Weights pass
    #: through host RAM while loading: too little is diagnosed as cgroup_oom.
    memory: str | None = Field(default=None, pattern=r"^\d{1,9}[KMGT]?$")
    #: A login node cannot see the compute nodes' GPUs: their model and memory are stated here, for the planner.
    gpu_name: str | None = Field(default=None, max_length=64)
    gpu_memory_gib: float = Field(gt=0, le=1024)
    #: Seconds between the watch's questions to the scheduler (squeue) while a job waits or runs.
    poll_interval_s: float = Field(default=1.0, gt=0, le=60)


class MultiNodeBackendSettings(Strict):
    """`backend: {kind: multinode, members: [A, B]}`: one deployment across several hosts with the engine's own
    multi-node runtime (SGLang `--nnodes N --node-rank R --dist-init-addr HEAD:PORT`; bot/backends/multinode.py).
    The members are other hosts of app.yaml (process backend), in rank order: the first is the head; the entry's own
    `models_dir`, `python`, `address` are the head's."""

    kind: Literal["multinode"]
    members: list[str] = Field(min_length=2, max_length=16)
    #: The torch.distributed rendezvous port on the head (`--dist-init-addr HEAD_ADDRESS:PORT`).
    dist_port: int = Field(default=20000, ge=1024, le=65535)


#: How and where a host's deployments run: one member per backend, chosen by `kind` (app.yaml's `backend:`). A
#: backend with settings of its own adds its model here and its class to bot/backends/registry.py.
BackendSettings = Annotated[Union[ProcessBackendSettings, SlurmBackendSettings, MultiNodeBackendSettings],
                            Field(discriminator="kind")]


class HealingPolicy(Strict):
    """What the bot may do about a crash without asking (issue 17). The defaults keep every relaunch behind an
    approval, as before the policy existed."""

    #: Crash categories whose diagnosed fix is applied and relaunched without an approval.
    auto_fix: list[str] = Field(default_factory=list)
    #: Automatic relaunches of one request (counted over the chain of fixes) before it stops and asks.
    max_auto_relaunches: int = Field(default=2, ge=0, le=10)
    #: Start a server again that dies after it was ready (the same plan after a fresh probe, or the fix the
    #: diagnosis has when `auto_fix` allows its category).
    restart_on_crash: bool = False
    #: Seconds before the first restart of a server that died after ready; doubled for each further restart.
    restart_backoff_s: float = Field(default=30, ge=0, le=3600)
    #: Restarts after ready allowed per deployment chain within an hour; past it the bot reports and waits.
    max_restarts_per_hour: int = Field(default=3, ge=0, le=60)

    @field_validator("auto_fix")
    @classmethod
    def _known_categories(cls, value: list[str]) -> list[str]:
        return known_crash_categories(value)


def known_crash_categories(value: list[str]) -> list[str]:
    from bot.models import CRASH_CATEGORIES

    unknown = [c for c in value if c not in CRASH_CATEGORIES]
    if unknown:
        raise ValueError(f"unknown crash categories {unknown}; known: {', '.join(CRASH_CATEGORIES)}")
    return list(dict.fromkeys(value))


class HostPolicy(Strict):
    """A host's own healing settings (app.yaml `hosts.NAME.policy`): each one given replaces the global one."""

    auto_fix: list[str] | None = None
    max_auto_relaunches: int | None = Field(default=None, ge=0, le=10)
    restart_on_crash: bool | None = None
    restart_backoff_s: float | None = Field(default=None, ge=0, le=3600)
    max_restarts_per_hour: int | None = Field(default=None, ge=0, le=60)

    @field_validator("auto_fix")
    @classmethod
    def _known_categories(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else known_crash_categories(value)


class HostConfig(Strict):
    #: `backend: process` (default), or a mapping `backend: {kind: NAME, ...its settings}`.
    backend: BackendSettings = Field(default_factory=ProcessBackendSettings)
    address: str = "127.0.0.1"
    port: int = Field(default=22, ge=1, le=65535)
    user: str | None = None
    identity_file: str | None = None
    #: Strict host key checking: the host's key must be in this file. No silent trust on first use.
    known_hosts: str | None = None
    python: str = "~/ml-env/bin/python3"
    models_dir: str
    #: More folders the probe lists models in (after models_dir; the Hugging Face hub cache is always searched).
    extra_models_dirs: list[str] = Field(default_factory=list)
    log_dir: str = "~/deploybot-logs"
    models: list[str] | None = None
    #: Drafters of a model: ``{Qwen3.6-27B: [Qwen3.6-27B-DFlash]}``, each a folder name the probe finds or an
    #: absolute path to a drafter folder outside models_dir. When a model has entries here, an unnamed drafter
    #: ("with our drafter") is chosen among them only.
    drafters: dict[str, list[str]] = Field(default_factory=dict)
    transport: Literal["ssh", "local"] = "ssh"
    #: Free-text description of the GPUs ("2x NVIDIA RTX A6000"); the probe is the truth, this helps the parser
    #: answer "on both GPUs" before a probe ran.
    gpus: str | None = None
    #: Who may deploy here (Slack user IDs / channel IDs); empty = everyone allowed by the workspace.
    allowed_users: list[str] = Field(default_factory=list)
    allowed_channels: list[str] = Field(default_factory=list)
    #: The bind address the server is given (`--host`); the endpoint posted uses `address`.
    bind: str = "0.0.0.0"
    connect_timeout_s: float = Field(default=10.0, gt=0)
    #: This host's own healing settings (auto_fix, max_auto_relaunches, restart_on_crash, ...); unset keys follow
    #: the global policy.
    policy: HostPolicy = Field(default_factory=HostPolicy)

    @field_validator("backend", mode="before")
    @classmethod
    def _backend_by_name(cls, value: Any) -> Any:
        """`backend: process` is short for `backend: {kind: process}`."""
        return {"kind": value} if isinstance(value, str) else value

    @field_validator("models")
    @classmethod
    def _model_names(cls, value: list[str] | None) -> list[str] | None:
        for name in value or []:
            if not re.match(MODEL_NAME_PATTERN, name):
                raise ValueError(f"model folder name {name!r} must match {MODEL_NAME_PATTERN}")
        return value

    @field_validator("drafters")
    @classmethod
    def _drafter_names(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for target, names in value.items():
            if not re.match(MODEL_NAME_PATTERN, target):
                raise ValueError(f"drafters: model name {target!r} must match {MODEL_NAME_PATTERN}")
            for name in names:
                if name.startswith("/"):
                    if not re.match(DRAFTER_PATH_PATTERN, name) or "/../" in name + "/":
                        raise ValueError(f"drafters.{target}: path {name!r} must match {DRAFTER_PATH_PATTERN}")
                elif not re.match(MODEL_NAME_PATTERN, name):
                    raise ValueError(f"drafters.{target}: folder name {name!r} must match {MODEL_NAME_PATTERN}")
        return value

    def drafter_names(self, model: str) -> list[str]:
        """The drafters app.yaml lists for a model, as folder names (a path's last part)."""
        return [entry.rstrip("/").rsplit("/", 1)[-1] for entry in self.drafters.get(model, [])]

    @model_validator(mode="after")
    def _ssh_needs_known_hosts(self) -> "HostConfig":
        if self.transport == "ssh" and not self.known_hosts:
            raise ValueError("an ssh host needs known_hosts (strict host key checking; keys are never trusted silently)")
        return self

    @property
    def gpu_count(self) -> int | None:
        if not self.gpus:
            return None
        match = re.match(r"\s*(\d+)\s*x", self.gpus)
        return int(match.group(1)) if match else None


ApprovalReason = Literal["fix_relaunch", "stop_foreign", "shared_gpus", "thin_margin"]


class Policy(Strict):
    approvers: list[str] = Field(default_factory=list)
    self_approve: bool = False
    approval_ttl_minutes: float = Field(default=30, gt=0)
    #: Below this per-GPU margin a plan needs approval.
    min_margin_gib: float = Field(default=2.0, ge=0)
    require_approval_for: list[ApprovalReason] = Field(
        default_factory=lambda: ["fix_relaunch", "stop_foreign", "shared_gpus", "thin_margin"]
    )
    port_range: tuple[int, int] = (30000, 30999)
    #: Seconds to wait for a server to become ready before calling it stuck.
    ready_timeout_s: float = Field(default=1800, gt=0)
    #: Seconds between TERM and KILL when stopping.
    stop_grace_s: float = Field(default=20, ge=0)
    #: While serve follows a ready server: seconds between reads of its engine's /metrics (0 = never).
    engine_watch_interval_s: float = Field(default=60, ge=0)
    #: Automatic fixes and restarts after a crash (issue 17): see HealingPolicy; hosts may override them
    #: (hosts.NAME.policy).
    auto_fix: list[str] = Field(default_factory=list)
    max_auto_relaunches: int = Field(default=2, ge=0, le=10)
    restart_on_crash: bool = False
    restart_backoff_s: float = Field(default=30, ge=0, le=3600)
    max_restarts_per_hour: int = Field(default=3, ge=0, le=60)

    @field_validator("auto_fix")
    @classmethod
    def _known_categories(cls, value: list[str]) -> list[str]:
        return known_crash_categories(value)

    def healing_for(self, host: "HostConfig") -> HealingPolicy:
        """The global healing settings with the host's own ones in their place."""
        mine = {name: getattr(self, name) for name in HealingPolicy.model_fields}
        return HealingPolicy.model_validate({**mine, **host.policy.model_dump(exclude_none=True)})


class SlackConfig(Strict):
    #: Where excerpts are batched: at most one excerpt message per interval.
    excerpt_interval_s: float = Field(default=5.0, ge=0)
    excerpt_max_lines: int = Field(default=12, ge=1, le=200)


class DiscoveryConfig(Strict):
    #: `serve` probes every host at start and again this often (seconds; 0: only at start) to keep the models,
    #: GPUs and engines it knows fresh. A name not found still triggers a probe of its host right away.
    refresh_interval_s: float = Field(default=600, ge=0)


class AppConfig(Strict):
    hosts: dict[str, HostConfig]
    policy: Policy = Field(default_factory=Policy)
    slack: SlackConfig = Field(default_factory=SlackConfig)
    discovery: DiscoveryConfig = Field(default_factory=DiscoveryConfig)

    @field_validator("hosts")
    @classmethod
    def _host_names(cls, value: dict[str, HostConfig]) -> dict[str, HostConfig]:
        if not value:
            raise ValueError("at least one host is needed")
        for name in value:
            if not re.match(HOST_NAME_PATTERN, name):
                raise ValueError(f"host name {name!r} must match {HOST_NAME_PATTERN}")
        for name, host in value.items():
            if isinstance(host.backend, MultiNodeBackendSettings):
                wrong = [m for m in host.backend.members
                         if m not in value or not isinstance(value[m].backend, ProcessBackendSettings)]
                if wrong or len(set(host.backend.members)) != len(host.backend.members):
                    raise ValueError(f"{name}: members must be distinct hosts of this file with the process backend "
                                     f"(not: {', '.join(wrong) or 'a repeated name'})")
        return value


class Secrets(BaseSettings):
    """Secrets and endpoints from the environment, never from app.yaml."""

    model_config = SettingsConfigDict(extra="ignore")

    slack_bot_token: str | None = None
    slack_signing_secret: str | None = None
    slack_app_token: str | None = None
    slack_api_url: str | None = None  # e.g. http://127.0.0.1:8999/api/ for a local Slack-compatible server
    hf_token: str | None = None

    def values(self) -> list[str]:
        """The secret strings themselves, for redaction."""
        return [v for v in (self.slack_bot_token, self.slack_signing_secret, self.slack_app_token, self.hf_token) if v]


def _format_validation_error(error: ValidationError, source: str) -> str:
    lines = [f"{source} is invalid:"]
    for item in error.errors():
        key = ".".join(str(part) for part in item["loc"]) or "(top level)"
        lines.append(f"  {key}: {item['msg']}")
    lines.append("Fix the keys above (README.md, Configuration, lists every key) and run again.")
    return "\n".join(lines)


def default_config_path() -> Path:
    return Path(os.environ.get("DEPLOYBOT_CONFIG") or "app.yaml")


def load_config(path: str | Path | None = None) -> AppConfig:
    config_path = Path(path) if path else default_config_path()
    try:
        raw = yaml.safe_load(config_path.read_text())
    except FileNotFoundError:
        raise ConfigError(
            f"config file {config_path} not found: give one with --config PATH (or DEPLOYBOT_CONFIG), or create it "
            f"with `deploybot host add NAME [USER@]ADDRESS[:PORT]` (README.md, Configuration)"
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{config_path} is not valid YAML: {exc}\nFix the line it points at and run again.") from None
    return parse_config(raw, str(config_path))


def parse_config(raw: object, source: str = "config") -> AppConfig:
    if not isinstance(raw, dict):
        raise ConfigError(f"{source} must be a mapping with a 'hosts' key")
    try:
        return AppConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(_format_validation_error(exc, source)) from None


def expand(path: str) -> str:
    """Expand ~ for paths on THIS machine (identity files, known_hosts); host paths are expanded on the host."""
    return os.path.expanduser(path)
