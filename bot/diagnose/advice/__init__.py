"""Next steps and the fix for a diagnosed crash, with this plan's numbers on this host: routes each category to the
module that advises on it.

The diagnoser (bot/diagnose/match.py) names the cause; this package says what to do about it. With a plan and host
facts the steps quote real numbers ("weights need 25.9 GiB per GPU at TP 2 and the card has 47.5 GiB free; the KV
cache did not fit at --mem-fraction-static 0.88: relaunch with 0.80") and, where the remedy is a plan change, the
``Fix`` carries it as ``PlanOverrides`` for the planner to re-plan behind an approval. Without a plan the steps stay
generic but concrete; a fix is still given when its value does not depend on the plan (MTP off, fewer CUDA-graph
batch sizes, float16 on a GPU without bfloat16, no P2P).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from bot.diagnose.advice.arguments import advise_bad_argument
from bot.diagnose.advice.build import advise_jit
from bot.diagnose.advice.files import advise_dependency, advise_files, advise_hub, advise_transformers
from bot.diagnose.advice.hardware import advise_cuda, advise_host_oom, advise_nccl, advise_quantization
from bot.diagnose.advice.layout import advise_tp
from bot.diagnose.advice.memory import advise_graph, advise_kv, advise_weights
from bot.diagnose.advice.other import advise_other
from bot.diagnose.advice.plan_view import PlanView
from bot.diagnose.advice.port import advise_port
from bot.diagnose.advice.slurm import advise_cgroup_oom, advise_preemption, advise_time_limit
from bot.diagnose.advice.speculative import advise_speculative
from bot.diagnose.advice.version import advise_architecture, architecture_named, installed_version, version_sentence
from bot.diagnose.flag_history import flag_history
from bot.diagnose.types import Advice, Finding, LogLine
from bot.models import Fix, PlanOverrides

__all__ = ["PlanView", "advise"]

#: The engine's own remedy in its message ("try to increase --mamba-full-memory-ratio or --max-mamba-cache-size",
#: "Please increase --max-model-len"): quoted when the advice does not already name that flag.
_ENGINE_SUGGESTS = re.compile(r"\b(?:please |try (?:to )?|consider )(?:increas|decreas|reduc|lower|rais|set|us|enabl"
                              r"|disabl|add|pass|specify)\w{0,4}\b[^.;\n]{0,160}?(--[a-z][\w-]{1,60})[^.;\n]{0,80}",
                              re.IGNORECASE)

#: The advisers that need only the finding and the plan.
_ADVISERS: dict[str, Callable[[Finding, PlanView], Advice]] = {
    "kv_cache_insufficient": advise_kv,
    "cuda_graph_oom": advise_graph,
    "gpu_oom_weights": advise_weights,
    "tp_not_divisible": advise_tp,
    "speculative_config_invalid": advise_speculative,
    "bad_argument": advise_bad_argument,
    "hub_access": advise_hub,
    "model_files_missing_or_corrupt": advise_files,
    "missing_dependency": advise_dependency,
    "transformers_too_old": advise_transformers,
    "cuda_arch_or_driver": advise_cuda,
    "quantization_unsupported": advise_quantization,
    "nccl_error": advise_nccl,
    "host_oom_killed": advise_host_oom,
    "unsupported_architecture": advise_architecture,
    "time_limit": advise_time_limit,
    "preemption": advise_preemption,
    "cgroup_oom": advise_cgroup_oom,
    "other": advise_other,
}


def advise(f: Finding, s: PlanView, lines: list[LogLine]) -> Advice:
    if f.category == "jit_compile_failure":
        return advise_jit(f, s, lines)
    if f.category == "port_in_use":
        return advise_port(f, s, lines)
    if f.category == "bad_argument" and f.kind == "trust_remote_code":
        return (["the model folder ships its own modelling/tokenizer code: relaunch with --trust-remote-code (only "
                 "for checkpoints you trust: it runs their Python code)"],
                Fix(summary="add --trust-remote-code", overrides=PlanOverrides(extra_args=["--trust-remote-code"])))
    adviser = _ADVISERS.get(f.category)
    steps, fix = adviser(f, s) if adviser else ([], None)
    if f.category == "bad_argument" and f.rule == "argparse_unrecognized" and f.match is not None:
        # Which captured release has, renamed or dropped each refused flag.
        for flag in re.findall(r"--[\w-]{1,80}", f.match.group(1))[:3]:
            sentence = flag_history(s.engine, flag, installed_version(s))
            if sentence:
                steps.append(sentence)
    suggested = _ENGINE_SUGGESTS.search(f.decisive.text) if f.decisive is not None else None
    if suggested and not any(suggested.group(1) in step for step in steps):
        steps.append(f"the engine's own message suggests: \"{suggested.group(0).strip()}\"")
    if f.category == "speculative_config_invalid":
        # The release that added MTP drafting for this architecture, when the compatibility table knows it.
        sentence = version_sentence(architecture_named(f, s), s, mtp=True)
        if sentence:
            steps = [step for step in steps if "may predate MTP support" not in step] + [sentence]
    return steps, fix
