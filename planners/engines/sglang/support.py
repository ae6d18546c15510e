"""Which SGLang releases serve which architectures (engines/LAUNCH_FLAGS.md §3 unless a row names another source)."""

from __future__ import annotations

import re

from ..base import NameRule, SupportRow

_QWEN35 = SupportRow(
    minimum="0.5.9", mtp="0.5.9", trust_remote_code=True,
    source="SGLang v0.5.9 (InferenceX MTP runs); SGLang docs launch Qwen3.5 with --trust-remote-code",
)
_QWEN3 = SupportRow(
    minimum="0.4.6",
    source="Qwen3 model cards: 'sglang>=0.4.6.post1 or vllm>=0.8.5' (general knowledge, not in the notes)",
)

SUPPORT: dict[str, SupportRow] = {
    "Qwen3_5ForConditionalGeneration": _QWEN35,
    "Qwen3_5MoeForConditionalGeneration": _QWEN35,
    "Qwen3_5ForCausalLM": _QWEN35,
    "Qwen3_5MoeForCausalLM": _QWEN35,
    "Qwen3NextForCausalLM": SupportRow(mtp="0", source="SGLang PR #10233 (NEXTN in docs/basic_usage/qwen3.md)"),
    "DeepseekV3ForCausalLM": SupportRow(minimum="0.4.1", mtp="0", source="DeepSeek-V3 README (SGLang v0.4.1)"),
    "Qwen3ForCausalLM": _QWEN3,
    "Qwen3MoeForCausalLM": _QWEN3,
    "Glm4MoeForCausalLM": SupportRow(mtp="0"),
    "MiMoForCausalLM": SupportRow(mtp="0"),
    "LlamaForCausalLM": SupportRow(),
    "MistralForCausalLM": SupportRow(),
}

NAME_RULES: tuple[NameRule, ...] = (
    NameRule(re.compile(r"qwen3\.6", re.I), "0.5.10", "SGLang cookbook: 'SGLang >=0.5.10 is required for Qwen3.6'"),
)
