"""Which engine versions serve which architectures and features (MTP, FP8 by compute capability).

Figures come from engines/LAUNCH_FLAGS.md §3 and §1.4/§2.3 unless a row names another source. A version the table
does not know is not a refusal: the planner allows it and says so. Versions are compared PEP 440-style with
`packaging` ("0.5.10.post1" > "0.5.9", local tags like "+cu128" ignored).
"""

from __future__ import annotations

import re
from typing import Literal

from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, Field

from bot.models import GpuInfo

from .engines import registry
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


_QWEN35 = Support(
    minimum={"sglang": "0.5.9", "vllm": "0.17.0"},
    mtp={"sglang": "0.5.9", "vllm": "0.17.0"},
    trust_remote_code=("sglang",),
    source="vLLM v0.17.0 'full Qwen 3.5 support' (0.16.0 rejects it); SGLang v0.5.9 (InferenceX MTP runs); "
    "SGLang docs launch Qwen3.5 with --trust-remote-code",
)

ARCHITECTURES: dict[str, Support] = {
    "Qwen3_5ForConditionalGeneration": _QWEN35,
    "Qwen3_5MoeForConditionalGeneration": _QWEN35,
    "Qwen3_5ForCausalLM": _QWEN35,
    "Qwen3_5MoeForCausalLM": _QWEN35,
    "Qwen3NextForCausalLM": Support(
        minimum={"vllm": "0.10.2"},
        known_good={"vllm": "0.11.0"},
        mtp={"sglang": "0", "vllm": "0.10.2"},
        source="vLLM blog 2025-09-11 (>=0.10.2, safe >=0.11.0); SGLang PR #10233 (NEXTN in docs/basic_usage/qwen3.md)",
    ),
    "DeepseekV3ForCausalLM": Support(
        minimum={"sglang": "0.4.1", "vllm": "0.6.6"},
        mtp={"sglang": "0", "vllm": "0"},
        source="DeepSeek-V3 README (SGLang v0.4.1, vLLM v0.6.6)",
    ),
    "Qwen3ForCausalLM": Support(
        minimum={"sglang": "0.4.6", "vllm": "0.8.5"},
        source="Qwen3 model cards: 'sglang>=0.4.6.post1 or vllm>=0.8.5' (general knowledge, not in the notes)",
    ),
    "Qwen3MoeForCausalLM": Support(
        minimum={"sglang": "0.4.6", "vllm": "0.8.5"},
        source="Qwen3 model cards: 'sglang>=0.4.6.post1 or vllm>=0.8.5' (general knowledge, not in the notes)",
    ),
    "Gemma3ForConditionalGeneration": Support(
        minimum={"vllm": "0.8.0"},
        source="vLLM v0.8.0 added Gemma 3 (general knowledge, not in the notes)",
    ),
    "Gemma3ForCausalLM": Support(minimum={"vllm": "0.8.0"}, source="as Gemma3ForConditionalGeneration"),
    "Glm4MoeForCausalLM": Support(mtp={"sglang": "0", "vllm": "0"}),
    "MiMoForCausalLM": Support(mtp={"sglang": "0", "vllm": "0"}),
    "LlamaForCausalLM": Support(),
    "MistralForCausalLM": Support(),
}

#: Model-name rules layered on the architecture (same class, newer weights that need a newer engine).
NAME_RULES: list[tuple[re.Pattern[str], dict[str, str], str]] = [
    (
        re.compile(r"qwen3\.6", re.I),
        {"sglang": "0.5.10", "vllm": "0.17.0"},
        "SGLang cookbook: 'SGLang >=0.5.10 is required for Qwen3.6'",
    ),
]

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


def minimum_version(spec: ModelSpec, model_name: str, engine: Engine) -> tuple[str | None, str]:
    """The highest minimum that applies (architecture, then name rules), with its source."""
    support = support_for(spec)
    minimum = support.minimum.get(engine) if support else None
    source = support.source if support else ""
    for pattern, versions, rule_source in NAME_RULES:
        wanted = versions.get(engine)
        if pattern.search(model_name) and wanted and (minimum is None or at_least(wanted, minimum)):
            minimum, source = wanted, rule_source
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
