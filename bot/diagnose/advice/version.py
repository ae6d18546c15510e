"""What the installed engine version has to do with a crash: the version installed, and the release that added an
architecture or MTP drafting for it, from the compatibility table (planners/compat.py, itself sourced from the
engines' release notes)."""

from __future__ import annotations

import re

from bot.diagnose.advice.plan_view import PlanView, other_engine
from bot.diagnose.types import Advice, Finding
from bot.models import Fix, PlanOverrides
from planners.compat import ARCHITECTURES, at_least, engine_label
from planners.engines import registry

#: An architecture class name as engines print it (Qwen3_5ForCausalLM, DeepseekV3ForCausalLM, LlavaQwenModel).
_ARCH_NAME = re.compile(r"\b([A-Z][A-Za-z0-9_]{1,80}For(?:CausalLM|ConditionalGeneration|SequenceClassification"
                        r"|TokenClassification|MaskedLM|Speech\w{0,30}|[A-Z]\w{0,40}))\b")


def installed_version(s: PlanView) -> str | None:
    """The engine version of this launch: the plan's, else what the probe found on the host."""
    if s.plan and s.plan.engine_version:
        return s.plan.engine_version
    if s.engine and s.facts and s.engine in s.facts.engines:
        return s.facts.engines[s.engine].version
    return None


def architecture_of_model_type(model_type: str) -> str | None:
    """The table's architecture for a config model_type ('qwen3_moe' -> 'Qwen3MoeForCausalLM'; ForCausalLM first)."""
    key = model_type.replace("_", "").replace("-", "").lower()
    found = [arch for arch in ARCHITECTURES if arch.split("For", 1)[0].replace("_", "").lower() == key]
    causal = [arch for arch in found if arch.endswith("ForCausalLM")]
    return (causal or found or [None])[0]


_MODEL_TYPE = re.compile(r"model type [`'\"]?([\w.-]{1,80})")


def architecture_named(f: Finding, s: PlanView) -> str | None:
    """The architecture the crash is about: named in the decisive line (as a class or a model type), else the
    model's config.json."""
    texts = [f.decisive.text] if f.decisive else []
    for text in texts:
        match = _ARCH_NAME.search(text)
        if match and not match.group(1).startswith("Transformers"):
            return match.group(1)
        model_type = _MODEL_TYPE.search(text)
        if model_type and architecture_of_model_type(model_type.group(1)):
            return architecture_of_model_type(model_type.group(1))
    config = s.facts.model.config if s.facts and s.facts.model and s.facts.model.config else None
    architectures = config.get("architectures") if config else None
    if isinstance(architectures, list) and architectures and isinstance(architectures[0], str):
        return architectures[0]
    return None


def added_in(arch: str | None, engine: str | None, *, mtp: bool = False) -> str | None:
    """The first release of ``engine`` that serves ``arch`` (or drafts it with MTP), when the table knows."""
    if not arch or not engine or not registry.is_engine(engine) or arch not in ARCHITECTURES:
        return None
    table = ARCHITECTURES[arch].mtp if mtp else ARCHITECTURES[arch].minimum
    version = table.get(engine)
    return version if version and version != "0" else None


def version_sentence(arch: str | None, s: PlanView, *, mtp: bool = False) -> str | None:
    """'SGLang 0.5.9 added Qwen3_5ForCausalLM; this host runs SGLang 0.5.5' when the table knows."""
    minimum = added_in(arch, s.engine, mtp=mtp)
    if minimum is None or s.engine is None:
        return None
    installed = installed_version(s)
    what = f"MTP drafting for {arch}" if mtp else arch
    label = engine_label(s.engine, minimum)
    if installed and at_least(installed, minimum) is False:
        running = engine_label(s.engine, installed)
        return f"{label} added {what}; this launch runs {running}: upgrade to {minimum} or later"
    if installed:
        return f"{label} added {what} and {engine_label(s.engine, installed)} is newer: the failure is elsewhere " \
               f"(the model's config or a regression)"
    return f"{label} added {what}: check the installed version is at least {minimum}"


_KIND_WORDS = {
    "v1": "the engine's V1 engine does not run it",
    "fallback": "the engine has no native implementation and its generic Transformers fallback class cannot run it",
    "engine_too_old": "this engine release predates it (and so does the transformers it ships with)",
    "not_multimodal": "this release does not know it as a multimodal model (vLLM refused --limit-mm-per-prompt for "
                      "it): its multimodal implementation came in a later release, or config.json's architectures "
                      "names a text-only class; for a text-only model drop --limit-mm-per-prompt",
    "config_shape": "its config.json is not of the shape the engine's model code reads (a wrapper or remote-code "
                    "config, or a checkpoint of another family under a known architecture name): use the checkpoint "
                    "format the engine's supported-models list names for it",
    "hybrid_kv": "its layers need more than one kind of KV cache (sliding-window and full attention, or Mamba state "
                 "beside attention) and the model runner in use, a hardware backend's or a KV-cache plugin's "
                 "(kvcached, an offload connector), allocates only one: run without that plugin, or on the stock GPU "
                 "runner",
    "inspect": "the engine could not load its implementation of it (\"failed to be inspected\": the model module "
               "failed to import; the subprocess's error names the package)",
}


def advise_architecture(f: Finding, s: PlanView) -> Advice:
    arch = architecture_named(f, s)
    version = installed_version(s)
    engine = engine_label(s.engine, version) if s.engine else "the engine"
    why = _KIND_WORDS.get(f.kind or "", "it has no implementation of it")
    steps = [f"{engine} cannot serve {arch or 'this architecture'}: {why}"]
    sentence = version_sentence(arch, s)
    if sentence or f.kind != "hybrid_kv":  # (the runner, not the release, lacks it: no upgrade to guess at)
        steps.append(sentence or f"upgrade {s.engine or 'the engine'} to a release that lists {arch or 'it'} among "
                                 f"its supported models")
    if f.kind == "v1":
        steps.append("older vLLM releases ran it on the V0 engine (VLLM_USE_V1=0); current ones list what V1 serves")
    if f.kind == "fallback":
        steps.append("check the model's config.json 'architectures' entry names a class the engine implements; "
                     "--trust-remote-code only helps when the checkpoint ships its own modelling code")
    fix = None
    other = other_engine(s)
    if other:
        steps.append(f"or serve it with {other[0]} {other[1]}, which is installed on the host")
        fix = Fix(summary=f"try {other[0]} {other[1]} instead", overrides=PlanOverrides(engine=other[0]))
    return steps, fix
