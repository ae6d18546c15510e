"""Advice for a tensor-parallel size the model does not divide into: the TPs that would."""

from __future__ import annotations

import re

from bot.diagnose.advice.plan_view import PlanView
from bot.diagnose.types import Advice, Finding
from bot.models import Fix, PlanOverrides


def advise_tp(f: Finding, s: PlanView) -> Advice:
    text = f.decisive.text if f.decisive else ""
    count = s.host_gpu_count
    steps: list[str] = []
    fix: Fix | None = None
    if f.kind == "block":
        numbers = re.search(r"=\s*(\d+) is not divisible by weight quantization block_[nk]\s*=\s*(\d+)", text)
        tp = s.tp
        choice = None
        if numbers and tp:
            total, block = int(numbers.group(1)) * tp, int(numbers.group(2))
            choice = next((t for t in range(tp - 1, 0, -1) if total % t == 0 and (total // t) % block == 0), None)
        elif tp and tp > 1:
            choice = tp // 2
        if choice:
            steps.append(f"at TP {tp} the quantized weight slices are not whole blocks: relaunch at TP {choice}")
            fix = Fix(summary=f"TP {tp} -> {choice} (whole quantization blocks per GPU)",
                      overrides=PlanOverrides(tp=choice))
        else:
            steps.append("lower the TP until each GPU's weight slice is a whole number of quantization blocks")
        steps.append("(vLLM) or keep the TP and add --enable-expert-parallel so experts are not split")
        return steps, fix
    numbers = re.search(r"\((\d+)\) must be divisible by tensor parallel size \((\d+)\)|(\d+) is not divisible by "
                        r"(\d+)", text)
    dimension = divisor = None
    if numbers:
        values = [int(v) for v in numbers.groups() if v]
        dimension, divisor = values[0], values[1]
    tp = s.tp or divisor
    heads = s.model_config_value("num_attention_heads")
    kv_heads = s.model_config_value("num_key_value_heads")
    limit = count or tp or 8
    candidates = [t for t in range(1, max(limit, 1) + 1)
                  if (dimension is None or dimension % t == 0) and (heads is None or heads % t == 0)
                  and (kv_heads is None or kv_heads % t == 0 or t % kv_heads == 0)]
    fits = candidates
    if s.plan and s.gpu_total:
        budget = (s.mem_fraction or 0.9) * s.gpu_total * 0.9
        fits = [t for t in candidates if s.plan.weights_bytes / t <= budget] or candidates
    # Powers of two first: other dimensions (KV heads, vocab, experts) are almost always divisible by them.
    powers = [t for t in fits if t & (t - 1) == 0]
    pool = powers or fits
    below = [t for t in pool if tp is None or t < tp]
    above = [t for t in pool if tp is not None and t > tp]
    choice = max(below) if below else (min(above) if above else None)
    what = f"{dimension} is not divisible by {divisor}" if dimension else "a model dimension is not divisible by TP"
    if choice and choice != tp:
        usable = ", ".join(str(t) for t in fits)
        steps.append(f"{what}: relaunch at TP {choice} (TPs that divide it"
                     + (f" on {count} GPUs" if count else "") + f": {usable})")
        fix = Fix(summary=f"TP {tp} -> {choice} (divides the model's heads)", overrides=PlanOverrides(tp=choice))
    else:
        steps.append(f"{what}: choose a TP that divides the attention heads (and the vision heads of a VLM)")
    return steps, fix
