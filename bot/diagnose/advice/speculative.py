"""Advice for a speculative-decoding (MTP / EAGLE) configuration the engine refused."""

from __future__ import annotations

import re

from bot.diagnose.advice.mtp import keep_mtp_for_radix_cache
from bot.diagnose.advice.plan_view import PlanView
from bot.diagnose.types import Advice, Finding
from bot.models import Fix, PlanOverrides


def advise_speculative(f: Finding, s: PlanView) -> Advice:
    text = f.decisive.text if f.decisive else ""
    kept = keep_mtp_for_radix_cache(text, s.plan, s.facts)  # the engine says how to keep MTP: do that
    if kept:
        return kept
    steps: list[str] = []
    if re.search(r"KeyError: '[^']*(?:mtp|nextn|eagle|draft|midlayer)", text, re.IGNORECASE) \
            or f.kind == "draft_weights":
        steps.append("the checkpoint has no MTP/draft weights this engine version can load (a fine-tune that "
                     "dropped them, or a loader bug in this version)")
    if "num_speculative_tokens" in text or "n_predict" in text:
        steps.append("lower num_speculative_tokens to what the drafter supports (its n_predict / "
                     "num_nextn_predict_layers)")
    if re.search(r"eagle3? is only supported for", text, re.IGNORECASE):
        steps.append("EAGLE-3 does not support this model family: use the model's own MTP heads if it has them")
    full_set = ("--speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 1 "
                "--speculative-num-draft-tokens 4" if s.engine == "sglang"
                else "--speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 1}'"
                if s.engine == "vllm" else "the full set of speculative flags the engine documents")
    steps.append(f"relaunch without speculative decoding (the fix), or give the complete set: {full_set}")
    version = s.plan.engine_version if s.plan else None
    if version:
        steps.append(f"{s.engine} {version} may predate MTP support for this model: check a newer release")
    return steps, Fix(summary="relaunch without speculative decoding (MTP off)",
                      overrides=PlanOverrides(speculative="none"))
