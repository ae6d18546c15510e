"""The names a request may use: hosts, the model folders on each, and how many GPUs each has.

The parser resolves free text against this and nothing else, so every name it returns is one listed here.
Names are validated with the same patterns as app.yaml, so a folder name that came back from a probe with odd
characters in it never becomes something a request can name.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from bot.config import HOST_NAME_PATTERN, MODEL_NAME_PATTERN, AppConfig

_GPU_COUNT = re.compile(r"\s*(\d+)\s*[x×]", re.IGNORECASE)


def gpu_count_from_description(description: str | None) -> int | None:
    """"2x NVIDIA RTX A6000 (49140 MiB)" -> 2; None when the text does not say (same rule as HostConfig.gpu_count)."""
    if not description:
        return None
    match = _GPU_COUNT.match(description)
    if not match:
        return None
    count = int(match.group(1))
    return count if 1 <= count <= 64 else None


class InventoryHost(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=HOST_NAME_PATTERN)
    models: list[str] = Field(default_factory=list)
    gpu_count: int | None = Field(default=None, ge=1, le=64)
    #: Free-text GPU description ("2x NVIDIA RTX A6000"), so "on the A6000 box" can name this host.
    gpus: str | None = None
    #: Folders among `models` that only draft for another model (by their config, or app.yaml's `drafters:`): a
    #: loose name ("qwen3.6") never means them; their full name still does ("with draft model X").
    drafters: list[str] = Field(default_factory=list)

    @field_validator("models")
    @classmethod
    def _model_names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not re.match(MODEL_NAME_PATTERN, name):
                raise ValueError(f"model folder name {name!r} must match {MODEL_NAME_PATTERN}")
        return list(dict.fromkeys(value))  # de-duplicated, first order kept


class Inventory(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    hosts: dict[str, InventoryHost]

    @model_validator(mode="after")
    def _keys_are_names(self) -> "Inventory":
        for key, host in self.hosts.items():
            if key != host.name:
                raise ValueError(f"hosts[{key!r}] is named {host.name!r}; the key must be the host's name")
        return self

    @classmethod
    def from_config(
        cls,
        config: AppConfig,
        probed_models: dict[str, list[str]] | None = None,
        probed_gpus: dict[str, str] | None = None,
        probed_drafters: dict[str, list[str]] | None = None,
    ) -> "Inventory":
        """Hosts of app.yaml. A host's models are its `models:` (optional) together with what its last probe
        listed (`probed_models`): the probe's view is the inventory, app.yaml may add names before any probe ran.
        `probed_gpus` ("2x NVIDIA RTX A6000", from the probe) stands in for a host's missing `gpus:`."""
        probed_models = probed_models or {}
        probed_gpus = probed_gpus or {}
        hosts: dict[str, InventoryHost] = {}
        for name, host in config.hosts.items():
            # A probe lists whatever folders exist; one whose name is not a safe folder name cannot be named.
            seen = [m for m in probed_models.get(name, []) if re.match(MODEL_NAME_PATTERN, m)]
            models = list(dict.fromkeys([*(host.models or []), *seen]))
            gpus = host.gpus or probed_gpus.get(name)
            listed = [d for target in host.drafters for d in host.drafter_names(target)]
            drafters = [d for d in dict.fromkeys([*listed, *(probed_drafters or {}).get(name, [])]) if d in models]
            hosts[name] = InventoryHost(name=name, models=models, gpu_count=gpu_count_from_description(gpus), gpus=gpus,
                                        drafters=drafters)
        return cls(hosts=hosts)

    @classmethod
    def from_corpus(cls, path: str | Path) -> "Inventory":
        """shared/corpus/inventory.json: {"hosts": {NAME: {"gpus": "2x ...", "models": [...], ...}}}."""
        raw = json.loads(Path(path).read_text())
        hosts: dict[str, InventoryHost] = {}
        for name, entry in raw["hosts"].items():
            description = entry.get("gpus")
            hosts[name] = InventoryHost(
                name=name,
                models=list(entry.get("models") or []),
                gpu_count=gpu_count_from_description(description),
                gpus=description,
            )
        return cls(hosts=hosts)

    def model_names(self) -> list[str]:
        """Every model folder name on any host, in first-seen order."""
        return list(dict.fromkeys(m for host in self.hosts.values() for m in host.models))

    def drafter_names(self) -> frozenset[str]:
        return frozenset(d for host in self.hosts.values() for d in host.drafters)

    def hosts_with(self, model: str) -> list[str]:
        return [name for name, host in self.hosts.items() if model in host.models]
