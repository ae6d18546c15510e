"""What the last probe of a host saw, kept in the store: its models (the inventory's source), GPUs and engines.

A view is small on purpose (no process list, no `--help` texts): it is what `deploybot host list` shows and what
the parser resolves names against, not what a plan is made from (a plan always takes a fresh probe).
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from bot.models import GIB, HostFacts, ModelLocation, utcnow



class GpuSummary(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    index: int
    name: str
    memory_total_bytes: int


class HostView(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    host: str
    probed_at: datetime = Field(default_factory=utcnow)
    models: list[str] = Field(default_factory=list)
    drafter_names: list[str] = Field(default_factory=list)  # folders that only draft for another model
    model_locations: list[ModelLocation] = Field(default_factory=list)
    gpus: list[GpuSummary] = Field(default_factory=list)
    gpu_error: str | None = None
    engines: dict[str, str | None] = Field(default_factory=dict)  # engine -> version (None: present but broken)
    hostname: str | None = None
    python: str | None = None  # the interpreter the probe ran with

    @classmethod
    def from_facts(cls, facts: HostFacts, python: str | None = None) -> "HostView":
        return cls(
            host=facts.host, probed_at=facts.probed_at, models=list(facts.models_available),
            drafter_names=list(facts.drafter_names),
            model_locations=list(facts.model_locations),
            gpus=[GpuSummary(index=g.index, name=g.name, memory_total_bytes=g.memory_total_bytes) for g in facts.gpus],
            gpu_error=facts.gpu_error, engines={n: e.version for n, e in facts.engines.items()},
            hostname=facts.hostname, python=python,
        )

    def gpu_description(self) -> str | None:
        """"2x NVIDIA RTX A6000" (the form app.yaml's `gpus:` takes), "1x A + 1x B" for mixed hosts."""
        if not self.gpus:
            return None
        counts = Counter(g.name for g in self.gpus)
        return " + ".join(f"{n}x {name}" for name, n in counts.items())

    def gpu_text(self) -> str:
        if not self.gpus:
            return f"no GPUs seen ({self.gpu_error})" if self.gpu_error else "no GPUs seen"
        return ", ".join(f"GPU {g.index} {g.name} {g.memory_total_bytes / GIB:.0f} GiB" for g in self.gpus)

    def engine_text(self) -> str:
        return ", ".join(f"{n} {v or '(broken)'}" for n, v in sorted(self.engines.items())) or "none found"

    def model_text(self) -> str:
        if not self.model_locations:
            return ", ".join(self.models) or "none found"
        return ", ".join(
            f"{loc.name} (HF cache {loc.repo}@{(loc.revision or '?')[:8]})" if loc.source == "hf_cache" else loc.name
            for loc in self.model_locations
        )
