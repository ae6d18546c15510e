"""Which vLLM releases serve which architectures (engines/LAUNCH_FLAGS.md §3 unless a row names another source)."""

from __future__ import annotations

import re

from ..base import NameRule, SupportRow

_QWEN35 = SupportRow(
    minimum="0.17.0", mtp="0.17.0", source="vLLM v0.17.0 'full Qwen 3.5 support' (0.16.0 rejects it)",
)
_QWEN3 = SupportRow(
    minimum="0.8.5",
    source="Qwen3 model cards: 'sglang>=0.4.6.post1 or vllm>=0.8.5' (general knowledge, not in the notes)",
)
_GEMMA3 = SupportRow(minimum="0.8.0", source="vLLM v0.8.0 added Gemma 3 (general knowledge, not in the notes)")

SUPPORT: dict[str, SupportRow] = {
    "Qwen3_5ForConditionalGeneration": _QWEN35,
    "Qwen3_5MoeForConditionalGeneration": _QWEN35,
    "Qwen3_5ForCausalLM": _QWEN35,
    "Qwen3_5MoeForCausalLM": _QWEN35,
    "Qwen3NextForCausalLM": SupportRow(
        minimum="0.10.2", known_good="0.11.0", mtp="0.10.2", source="vLLM blog 2025-09-11 (>=0.10.2, safe >=0.11.0)"
    ),
    "DeepseekV3ForCausalLM": SupportRow(minimum="0.6.6", mtp="0", source="DeepSeek-V3 README (vLLM v0.6.6)"),
    "Qwen3ForCausalLM": _QWEN3,
    "Qwen3MoeForCausalLM": _QWEN3,
    "Gemma3ForConditionalGeneration": _GEMMA3,
    "Gemma3ForCausalLM": _GEMMA3,
    "Glm4MoeForCausalLM": SupportRow(mtp="0"),
    "MiMoForCausalLM": SupportRow(mtp="0"),
    "LlamaForCausalLM": SupportRow(),
    "MistralForCausalLM": SupportRow(),
}

NAME_RULES: tuple[NameRule, ...] = (
    # Qwen3.6 keeps Qwen3.5's architecture classes; vLLM's first release for them is the Qwen3.5 one
    NameRule(re.compile(r"qwen3\.6", re.I), "0.17.0", "vLLM v0.17.0 'full Qwen 3.5 support' (Qwen3.6 shares the class)"),
)
