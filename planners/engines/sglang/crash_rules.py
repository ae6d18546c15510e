"""Crash rules only SGLang produces, as data (planners.engines.base.CrashRule); the diagnoser adds them to its
engine-neutral ones (bot/diagnose/rules.py, signals.py) when the deployment runs SGLang, or when the engine is
unknown.

Each pattern is one of SGLang's own messages, from its source (sglang/srt/model_executor/model_runner.py,
sglang/srt/server_args.py) at the releases deploybot serves (0.4-0.5.x):
- "Not enough memory. Please try to increase --mem-fraction-static." (model_runner.init_memory_pool) and
  "max_total_tokens=N is larger than the profiled value -M" (a negative KV budget, logged as a warning);
- ServerArgs' speculative checks are bare ``assert`` statements (e.g. --speculative-num-draft-tokens without
  --speculative-num-steps): an AssertionError right after speculative handling;
- sglang/srt/model_loader/utils.py ``resolve_transformers_arch``: "X has no SGlang implementation and the
  Transformers implementation is not compatible with SGLang." (raised under --model-impl auto; the warning "X has no
  SGLang implementation, falling back to Transformers implementation" is not a crash), seen in real reports for
  Qwen3_5MoeForCausalLM, BloomForCausalLM (public notes found with the search tool, 2026-12).
Patterns are linear-time: bounded gaps, no nested quantifiers (tests/adversarial.py checks them on 1 MB lines).
"""

from __future__ import annotations

import re

from ..base import CrashRule


def _r(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


RULES: tuple[CrashRule, ...] = (
    # SGLang checks its speculative arguments with bare asserts (e.g. draft tokens or topk without num-steps): the
    # AssertionError has no message, the frames above it name the speculative handling.
    CrashRule("speculative_assert", "speculative_config_invalid", _r(r"^\s*AssertionError\b:?\s*(.*)$"), 76, 0.8,
              "an assert in the engine's speculative-decoding argument checks failed: SGLang needs "
              "--speculative-num-steps, --speculative-eagle-topk and --speculative-num-draft-tokens all set, or "
              "none", context=_r(r"speculat")),
    # The generic Transformers fallback class cannot run an architecture SGLang has no native model for.
    CrashRule("sglang_transformers_fallback_incompatible", "unsupported_architecture",
              _r(r"([\w.]{1,120}) has no SGl?ang implementation and the Transformers implementation is not compatible"),
              76, 0.8, "SGLang has no native implementation of this architecture ({0}) and its generic Transformers "
              "fallback cannot run it", kind="fallback"),
    CrashRule("kv_not_enough_memory", "kv_cache_insufficient",
              _r(r"Not enough memory\. Please try to increase --mem-fraction-static|Not enough memory to allocate KV "
                 r"cache|leave no GPU memory for the KV cache"),
              82, 0.9, "the weights leave no room for the KV cache within --mem-fraction-static", kind="raise"),
    CrashRule("kv_profiled_negative", "kv_cache_insufficient",
              _r(r"max_total_tokens=\d+ is larger than the profiled value (-\d+)"), 70, 0.8,
              "the KV cache budget came out negative ({0} tokens): the weights fill the memory fraction",
              kind="raise", any_level=True),
    # The advice block SGLang appends to a failed capture's exception (model_executor/cuda_graph_runner.py
    # CUDA_GRAPH_CAPTURE_FAILED_MSG, piecewise_cuda_graph_runner.py's own; "recommonded ... perf loss" in releases
    # before 0.5): no other path prints these lines, so a tail cut below the "Capture cuda graph failed" line still
    # says the capture failed (sgl-project/sglang#6218), modest since the capture's own error is lost.
    CrashRule("capture_failed_advice", "cuda_graph_oom",
              _r(r"^\s*\d\. disable (?:CUDA graph by --disable-cuda-graph\. \(Not recomm[eo]nded"
                 r"|Piecewise CUDA graph by unset --enable-piecewise-cuda-graph)"), 30, 0.55,
              "the tail holds SGLang's advice for a failed CUDA graph capture: the capture failed (its error is above "
              "this tail)", kind="capture", any_level=True, unsure=("other",)),
)
