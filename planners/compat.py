"""Which engine versions serve which architectures and features (MTP, FP8 by compute capability).

Figures come from engines/LAUNCH_FLAGS.md §3 and §1.4/§2.3 unless a row names another source. A version the table
does not know is not a refusal: the planner allows it and says so. Versions are compared PEP 440-style with
`packaging` ("0.5.10.post1" > "0.5.9", local tags like "+cu128" ignored).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Literal

from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, Field

from bot.models import GpuInfo

from .engines import registry
from .engines.base import SupportRow
from .model import ModelSpec

#: A registered engine's name (planners/engines/registry.py derives the set).
Engine = str


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def parse_version(text: str | None) -> Version | None:
    if not text:
        return None
    try:
        return Version(text.strip().lstrip("vV"))
    except InvalidVersion:
        match = re.match(r"\s*v?(\d+(?:\.\d+)*)", text)
        return Version(match.group(1)) if match else None


def at_least(installed: str | None, minimum: str) -> bool | None:
    """True/False when the installed version is known; None when it is not (or cannot be parsed)."""
    have = parse_version(installed)
    if have is None:
        return None
    # compare release numbers so that 0.5.10rc1 / 0.17.0.dev counts as that release line
    return have.release >= Version(minimum).release


class Support(Frozen):
    """Minimum versions for one architecture (None: no known minimum)."""

    minimum: dict[str, str] = Field(default_factory=dict)
    #: Below this the architecture works but had known problems (old_engine risk).
    known_good: dict[str, str] = Field(default_factory=dict)
    #: MTP drafting support: engine -> first version ("0": supported wherever the architecture is, no separate
    #: minimum known); an engine absent here has no MTP drafter for this architecture.
    mtp: dict[str, str] = Field(default_factory=dict)
    #: Engines whose documented launch lines for this architecture pass --trust-remote-code.
    trust_remote_code: tuple[str, ...] = ()
    source: str = ""


class _Architectures(Mapping[str, Support]):
    """Every architecture some registered engine lists, with each engine's row (planners/engines/*/support.py)."""

    def __getitem__(self, arch: str) -> Support:
        rows = {e.name: e.support[arch] for e in registry.engines() if arch in e.support}
        if not rows:
            raise KeyError(arch)
        return Support(
            minimum={n: r.minimum for n, r in rows.items() if r.minimum},
            known_good={n: r.known_good for n, r in rows.items() if r.known_good},
            mtp={n: r.mtp for n, r in rows.items() if r.mtp},
            trust_remote_code=tuple(n for n, r in rows.items() if r.trust_remote_code),
            source="; ".join(dict.fromkeys(r.source for r in rows.values() if r.source)),
        )

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys(a for e in registry.engines() for a in e.support))

    def __len__(self) -> int:
        return sum(1 for _ in self)


ARCHITECTURES: Mapping[str, Support] = _Architectures()

#: Architectures whose checkpoints ship no MTP heads (used only when config.json has no MTP key).
ARCHITECTURES_WITHOUT_MTP = frozenset(
    {
        "LlamaForCausalLM",
        "MistralForCausalLM",
        "MixtralForCausalLM",
        "Qwen2ForCausalLM",
        "Qwen2MoeForCausalLM",
        "Qwen3ForCausalLM",
        "Qwen3MoeForCausalLM",
        "Gemma2ForCausalLM",
        "Gemma3ForCausalLM",
        "Gemma3ForConditionalGeneration",
        "Phi3ForCausalLM",
    }
)


class Check(Frozen):
    """The verdict on one engine for one model: problems refuse the plan, warnings become risks."""

    ok: bool
    problems: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


def support_for(spec: ModelSpec) -> Support | None:
    return next((ARCHITECTURES[a] for a in spec.architectures if a in ARCHITECTURES), None)


def _row(spec: ModelSpec, engine: Engine) -> SupportRow | None:
    rows = registry.get(engine).support
    return next((rows[a] for a in spec.architectures if a in rows), None)


def minimum_version(spec: ModelSpec, model_name: str, engine: Engine) -> tuple[str | None, str]:
    """The highest minimum that applies (the engine's architecture row, then its name rules), with its source."""
    row = _row(spec, engine)
    minimum = row.minimum if row else None
    source = row.source if row else ""
    for rule in registry.get(engine).name_rules:
        if rule.pattern.search(model_name) and (minimum is None or at_least(rule.minimum, minimum)):
            minimum, source = rule.minimum, rule.source
    return minimum, source


def engine_name(engine: str) -> str:
    return registry.label(engine)


def engine_label(engine: str, version: str | None) -> str:
    name = engine_name(engine)
    return f"{name} {version}" if version else f"{name} (version unknown)"


def check_engine(spec: ModelSpec, model_name: str, engine: Engine, version: str | None) -> Check:
    """Architecture support by version, plus the engine-wide known-good floor."""
    problems: list[str] = []
    warnings: list[str] = []
    notes: list[str] = []
    label = engine_label(engine, version)
    minimum, source = minimum_version(spec, model_name, engine)
    if minimum:
        verdict = at_least(version, minimum)
        if verdict is False:
            problems.append(
                f"{model_name} ({spec.architecture}) needs {engine_label(engine, '>= ' + minimum)}; "
                f"the host has {label} ({source})"
            )
        elif verdict is None:
            warnings.append(f"{label}: could not read the version to check {model_name} needs >= {minimum}")
    elif support_for(spec) is None:
        notes.append(f"{spec.architecture} is not in the compatibility table: no minimum {engine} version checked")
    support = support_for(spec)
    good = support.known_good.get(engine) if support else None
    if good and at_least(version, good) is False and not problems:
        warnings.append(f"{label} is older than {good}, the first release known to serve {spec.architecture} well")
    # below the engine's known-good floor the planner's memory model may not describe it: an old_engine risk
    floor = registry.get(engine).known_good
    if at_least(version, floor) is False and not problems:
        warnings.append(
            f"{label} is older than {floor}: its memory handling predates what this planner models, so the "
            "KV figures are less certain"
        )
    return Check(ok=not problems, problems=problems, warnings=warnings, notes=notes)


# ---------------------------------------------------------------------------------------------- MTP


def mtp_heads(spec: ModelSpec) -> bool | None:
    """Does the checkpoint carry MTP layers? True/False when known, None when config.json does not say."""
    if spec.mtp_layers is not None:
        return spec.mtp_layers > 0
    if any(a in ARCHITECTURES_WITHOUT_MTP for a in spec.architectures):
        return False
    return None


def check_mtp(spec: ModelSpec, engine: Engine, version: str | None) -> Check:
    support = support_for(spec)
    label = engine_label(engine, version)
    first = support.mtp.get(engine) if support else None
    if support is None or not support.mtp:
        return Check(
            ok=True,
            warnings=[
                f"{label}: MTP drafting for {spec.architecture} is not in the compatibility "
                "table; the engine may reject it at start"
            ],
        )
    if first is None:
        return Check(ok=False, problems=[f"{label} has no MTP drafter for {spec.architecture}"])
    verdict = at_least(version, first)
    if verdict is False:
        return Check(
            ok=False,
            problems=[f"MTP for {spec.architecture} needs {engine_label(engine, '>= ' + first)}; the host has {label}"],
        )
    return Check(ok=True)


def needs_trust_remote_code(spec: ModelSpec, engine: Engine, folder_has_code: bool) -> str | None:
    """Why --trust-remote-code is needed, or None."""
    if spec.has_auto_map:
        return "config.json names custom code (auto_map)"
    if folder_has_code:
        return "the model folder holds Python files (custom code)"
    support = support_for(spec)
    if support and engine in support.trust_remote_code:
        return f"{engine_name(engine)}'s documented launch of {spec.architecture} passes it"
    return None


# ---------------------------------------------------------------------------------------------- FP8 and GPUs

#: Compute capability by GPU name, for hosts where the probe could not read it (nvidia-smi fallback).
#: Order matters: more specific names first ("RTX 6000 Ada" before "A6000").
_CC_BY_NAME: list[tuple[str, str]] = [
    (r"H100|H200|H20\b|H800|GH200", "9.0"),
    (r"B200|B100|GB200", "10.0"),
    (r"RTX PRO 6000|RTX 50\d0|5090", "12.0"),
    (r"RTX 6000 Ada|RTX 4\d{3}|L40|L4\b|RTX 5000 Ada|RTX 4000 Ada", "8.9"),
    (r"A100|A800|A30\b", "8.0"),
    (r"A6000|A5000|A4000|A40\b|A10\b|A10G|RTX 30\d0|A16\b|A2\b", "8.6"),
    (r"T4\b|RTX 20\d0|Quadro RTX", "7.5"),
    (r"V100", "7.0"),
]


def compute_capability(gpu: GpuInfo) -> tuple[int, int] | None:
    text = gpu.compute_capability
    if not text:
        text = next((cc for pattern, cc in _CC_BY_NAME if re.search(pattern, gpu.name, re.I)), None)
    if not text:
        return None
    major, _, minor = text.partition(".")
    return int(major), int(minor or 0)


FP8Mode = Literal["native", "weight_only", "unsupported", "unknown"]


def fp8_mode(engine: Engine, cc: tuple[int, int] | None) -> tuple[FP8Mode, str]:
    """How an engine runs FP8 weights on a GPU of compute capability ``cc``, with the reason."""
    if cc is None:
        return "unknown", "the GPU's compute capability is unknown: FP8 support not checked"
    if cc >= (8, 9):
        return "native", f"sm{cc[0]}{cc[1]} has FP8 tensor cores"
    mode, why = registry.get(engine).fp8_below_native(cc)
    return mode, why  # type: ignore[return-value]
