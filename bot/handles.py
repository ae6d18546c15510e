"""Where a deployment runs, as the domain sees it: a neutral handle given by its backend (bot/backends/).

The pipeline, the store and the surfaces never look inside a handle: they keep it (it round-trips through
``model_dump_json``), give it back to the backend that made it, and show ``handle.label`` to people. Only the
backend that made a handle reads its fields. A new backend adds its handle here, as one more member of
``DeploymentHandle`` (a pydantic discriminated union on ``kind``), so a stored deployment names its backend.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field


class Handle(BaseModel):
    """What every handle has: a label for people and where its log is (shown when it starts)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: The server's log where the backend writes it (a path on the host, a job's output file).
    log_path: str
    #: The port the server answers on (health and /metrics are read there).
    port: int | None = None

    @property
    def label(self) -> str:  # pragma: no cover - every member overrides it
        raise NotImplementedError

    def holds_process(self, pid: int) -> bool:
        """Whether a process the probe sees on a GPU is this deployment's (status tells ours from others')."""
        return False


class ProcessHandle(Handle):
    """A detached process on a host (bot/backends/process.py): its supervisor's group and its exit file."""

    kind: Literal["process"] = "process"
    pid: int
    #: The process group of the supervisor that started it (stop signals the whole group).
    pgid: int | None = None
    #: The host's name for the deployment (``<model>-<port>``): its launch record is ``<key>.launch.json``.
    key: str | None = None
    #: Where the supervisor writes the engine's exit status (the bot is not its parent and cannot wait for it).
    exit_path: str | None = None

    @property
    def label(self) -> str:
        return f"PID {self.pid}"

    def holds_process(self, pid: int) -> bool:
        return pid == self.pid


class SlurmJob(Handle):
    """A batch job on a Slurm cluster (bot/backends/slurm.py): its id, its name (the deployment key, by which a
    restarted bot finds it again) and the node it runs on once the scheduler placed it."""

    kind: Literal["slurm"] = "slurm"
    job_id: str = Field(pattern=r"^\d+(_\d+)?$")
    job_name: str
    node: str | None = None

    @property
    def label(self) -> str:
        return f"job {self.job_id} on node {self.node}" if self.node else f"job {self.job_id}"


class RankHandle(BaseModel):
    """One rank of a multi-node deployment: the member host, its process, where its log started."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rank: int
    host: str
    handle: ProcessHandle
    log_offset: int = 0


class MultiNodeHandle(Handle):
    """One deployment over several hosts (bot/backends/multinode.py): a process per node, rank 0 serves HTTP."""

    kind: Literal["multinode"] = "multinode"
    ranks: list[RankHandle]

    @property
    def label(self) -> str:
        return ", ".join(f"rank {r.rank} {r.handle.label} on {r.host}" for r in self.ranks)

    def holds_process(self, pid: int) -> bool:
        return any(r.handle.holds_process(pid) for r in self.ranks)


#: Every kind of handle a backend may give; ``kind`` says which backend made it.
DeploymentHandle = Annotated[Union[ProcessHandle, SlurmJob, MultiNodeHandle], Field(discriminator="kind")]
