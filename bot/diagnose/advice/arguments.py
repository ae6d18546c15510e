"""Advice for launch arguments the engine refused (unknown flags, invalid values, a quantization mismatch)."""

from __future__ import annotations

import re
import shlex

from bot.diagnose.advice.plan_view import PlanView, argv_value_of, exception_message
from bot.diagnose.engine_keywords import ENGINE_KEYWORD_SET
from bot.diagnose.flag_history import captured_options
from bot.simhost.captures import captured_versions
from bot.diagnose.types import Advice, Finding
from bot.diagnose.vocabulary_rules import flags_named_in_prose
from bot.models import Fix, PlanOverrides


#: A setting's name as the engines' checks spell it: a snake_case field (its flag is the same with hyphens) or a flag.
_SETTING_NAME = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]{2,60}|\b[a-z][a-z0-9]{0,30}(?:_[a-z0-9]{1,30}){1,6}\b")


def _setting_step(text: str, s: PlanView) -> str:
    """The check's own words, and the flags of the settings it names (snake_case fields are --hyphenated flags)."""
    message = exception_message(text)
    flags = []
    for name in _SETTING_NAME.findall(message):
        flag = name if name.startswith("--") else "--" + name.replace("_", "-")
        if not name.startswith("--") and name not in ENGINE_KEYWORD_SET:
            continue  # a field of the engine's code, not one of its flags ("kv_data_type" is no --kv-data-type)
        if flag not in flags:
            flags.append(flag)
    flags += [flag for flag in flags_named_in_prose(message) if flag not in flags]
    given = [flag for flag in flags if flag in {token.split("=", 1)[0] for token in s.argv}]
    named = ", ".join(given or flags[:3])
    return (f"the engine's own check refused the settings: \"{message}\""
            + (f"; change {named} as it says" if named else "; change the setting it names")
            + (" (the plan passes " + ", ".join(given) + ")" if given else ""))


def _first_captured_with(engine: str, flag: str) -> str | None:
    """The first captured release of ``engine`` whose parser has ``flag`` (bot/simhost/enginehelp)."""
    return next((version for version in captured_versions(engine) if flag in captured_options(engine, version)), None)


#: vLLM's flag for the attention backend, with the first captured release that has it (older releases choose the
#: backend through the VLLM_ATTENTION_BACKEND variable only).
ATTENTION_BACKEND_FLAG = "--attention-backend" + (
    f" (vLLM {first} and later among the captured releases)"
    if (first := _first_captured_with("vllm", "--attention-backend")) else "")


#: Refusals whose next step the finding's kind alone decides (no number or flag of the tail in it).
_FIXED_STEPS = {
    "hybrid_kv": "this model keeps different KV caches per layer (sliding window, Mamba or linear attention) and "
                 "needs vLLM's hybrid KV-cache manager: drop --disable-hybrid-kv-cache-manager, and a KV connector or "
                 "KV offloading that turns it off (LMCache, --kv-transfer-config, --kv-offloading-*) unless its "
                 "release supports hybrid models",
    "usage": "read the launch's arguments against this version's --help: the refused one is named on the \"error:\" "
             "line right after the usage block (keep more of the log to see it)",
    # (a relative path is resolved against the engine's working directory; vLLM's examples/ folder is in its source
    # tree, not in the wheel)
    "chat_template_path": "pass --chat-template an absolute path to a .jinja file that exists on the host the engine "
                          "runs on (a repo-relative path such as examples/... exists only in a source checkout), or a "
                          "template name this engine version ships",
    "chat_template_missing": "this model's tokenizer defines no chat template: pass --chat-template with the model "
                             "card's template file (a .jinja beside the weights, or from the model's repository), or "
                             "serve it for completions only",
    "lora_unsupported": "relaunch without --enable-lora (and --lora-modules) to serve the base model, or merge the "
                        "adapter into the weights and serve the merged checkpoint; a later engine release may add "
                        "LoRA for this architecture (its supported-models list marks LoRA per model)",
    "v1_env": "set VLLM_USE_V1 once, before anything imports vllm, in the environment of every process that builds "
              "the engine (a launcher's Ray workers need it in their runtime_env), or unset it and let the release "
              "choose; a framework pinning an older engine API may need its own upgrade",
}


def _unknown_flags_advice(flags_text: str, s: PlanView) -> Advice:
    """argparse's "unrecognized arguments": a flag spelled with underscores is respelled, any other is dropped."""
    flags = [token for token in flags_text.split() if token.startswith("-")]
    given = {token.split("=", 1)[0] for token in s.argv}
    steps: list[str] = []
    remove: list[str] = []
    extra: list[str] = []
    for flag in flags:
        name = flag.split("=", 1)[0]
        hyphenated = name.replace("_", "-")
        if hyphenated != name:
            steps.append(f"{name} is spelled with underscores: the engine expects {hyphenated}")
            value = argv_value_of(s.argv, [name])
            if name in given:
                remove.append(name)
                extra.extend([hyphenated] + ([value] if value else []))
        else:
            steps.append(f"{name} is not an option of this {s.engine or 'engine'} version"
                         + (f" ({s.plan.engine_version})" if s.plan and s.plan.engine_version else "")
                         + ": drop it or upgrade the engine")
            if name in given:
                remove.append(name)
    fix = Fix(summary="fix the unknown flag(s): " + ", ".join(remove),
              overrides=PlanOverrides(remove_args=remove, extra_args=extra)) if remove else None
    return steps, fix


def _gpu_count_step(f: Finding, s: PlanView) -> str:
    visible = s.host_gpu_count
    tp = argv_value_of(s.argv, ["--tensor-parallel-size", "-tp"])
    asked = ("a GPU index past the GPUs this process sees (CUDA_VISIBLE_DEVICES renumbers them from 0; "
             "--base-gpu-id, a device id), or more ranks than GPUs") if f.rule == "invalid_device_ordinal" else \
        "more GPUs than the engine sees"
    return (f"the launch asks for {asked}"
            + (f" (--tensor-parallel-size {tp})" if tp else "")
            + (f": the host has {visible} GPU(s); lower --tensor-parallel-size x --pipeline-parallel-size "
               f"to at most {visible}" if visible else
               ": lower --tensor-parallel-size x --pipeline-parallel-size to the GPUs visible")
            + ", or give the container/pod that many (CUDA_VISIBLE_DEVICES, nvidia.com/gpu, the Ray cluster)")


def _bind_address_step(text: str, s: PlanView) -> str:
    address = re.search(r"addr='([^']{1,80})'|address \('([^']{1,60})', (\d{1,5})\)", text)
    named = next((g for g in address.groups() if g), None) if address else None
    host = argv_value_of(s.argv, ["--host"])
    return (("the address it binds" + (f" ({named})" if named else "") + " is not one of this host's: ")
            + (f"--host {host} is not an address of this machine; " if host else "")
            + "bind --host 0.0.0.0 or an address `ip -4 addr` lists; in a multi-node launch give each node "
              "its own IP (VLLM_HOST_IP, --dist-init-addr / --master-addr of the node that listens), and "
              "run a container with host networking when it must bind the host's IP")


def _feature_attention_step(f: Finding, text: str, s: PlanView) -> str:
    feature = f.match.group(1) if f.match is not None else "the feature"
    flags = [token for token in s.argv if token.startswith("--enable-") or token.startswith("--disable-")]
    return (f"{feature} does not serve this model's attention type (\"{exception_message(text)[:160]}\"): "
            f"relaunch without the setting that turns it on"
            + (f" (the plan passes {', '.join(flags)})" if flags else
               " (HiRadixCache: --enable-hierarchical-cache)" if "HiRadix" in feature else ""))


def _refusal_step(f: Finding, text: str, s: PlanView) -> str:
    """The next step for a refusal that offers no automatic fix, by the finding's kind or rule."""
    if f.kind in _FIXED_STEPS:
        return _FIXED_STEPS[f.kind]
    if f.kind == "mm_budget":
        need = f.match.group(1) if f.match is not None else None
        return ("raise --max-num-batched-tokens" + (f" to at least {need}" if need else "")
                + " so one image fits a batch; for a model vLLM does not force it off for (it does for "
                  "bidirectional multimodal attention, Gemma 3's), leaving chunked multimodal input on also works "
                  "(drop --disable-chunked-mm-input)")
    if f.kind == "feature_attention":
        return _feature_attention_step(f, text, s)
    if f.kind == "moe_backend_value":
        return (f"pick one of the values the message lists for moe_backend (\"{exception_message(text)[:200]}\"), "
                f"or leave it unset so vLLM chooses")
    if f.kind == "attention_backend":
        backend = f.match.group(1) if f.match is not None else "the selected backend"
        return (f"{backend} cannot run this model or GPU (the engine's reason is quoted): unset the backend "
                f"(VLLM_ATTENTION_BACKEND, or {ATTENTION_BACKEND_FLAG}) so the engine picks one that can, "
                f"or select one the reason does not rule out")
    if f.match is not None and f.rule == "enum_value_invalid":
        return (f"'{f.match.group(1)}' is not a {f.match.group(2)} this build knows (the values are an enum of "
                f"the installed release): pick one the engine's --help lists for that setting, or upgrade the "
                f"engine if the value is newer than the build; a framework that launches the engine (verl, "
                f"OpenRLHF) may be passing it")
    if f.rule in ("setting_refused", "configuration_refused", "named_setting_refused"):
        return _setting_step(text, s)
    if f.match is not None and f.rule == "argparse_invalid":
        return f"{f.match.group(1)}: {f.match.group(2)}"
    return f"the arguments were refused: {f.cause}"


def advise_bad_argument(f: Finding, s: PlanView) -> Advice:
    text = f.decisive.text if f.decisive else ""
    if f.kind == "quantization_arg" and f.match is not None:
        own = f"{f.match.group(1)}-quantized" if f.match.group(1) else \
            "quantized by another method (its config says which)"
        return ([f"the checkpoint is {own}: drop --quantization {f.match.group(2)} "
                 f"and let the engine read it from the config"],
                Fix(summary="drop --quantization", overrides=PlanOverrides(remove_args=["--quantization"])))
    unknown = re.search(r"unrecognized arguments?: (.+)", text)
    if not unknown and f.kind == "gpu_count":
        return [_gpu_count_step(f, s)], None
    if not unknown and f.kind == "bind_address":
        return [_bind_address_step(text, s)], None
    steps, fix = _unknown_flags_advice(unknown.group(1), s) if unknown else ([_refusal_step(f, text, s)], None)
    plugin = s.engine_plugin
    helper = shlex.join(plugin.discovery.help_command("python")) if plugin is not None else None
    steps.append(f"`{helper}` on the host lists the options this version accepts" if helper else
                 "the engine's --help on the host lists the options this version accepts")
    return steps, fix
