"""What the probe learns of a host, in one SSH round trip: its GPUs and their processes, the servers running, the
model folders and their configs, the engines installed (bot/models.py names these too)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from bot.model_base import EngineName, Frozen, utcnow


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
