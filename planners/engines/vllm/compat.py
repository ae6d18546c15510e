"""vLLM's version-dependent knowledge: the MTP method names and FP8 below sm89 (LAUNCH_FLAGS.md §2.3, §3)."""

from __future__ import annotations

from ...compat import at_least
from ...model import ModelSpec

#: vLLM accepts the generic method "mtp" from this release (the Qwen3.5 recipe, which needs 0.17, uses it);
#: older releases need the model-specific name.
VLLM_GENERIC_MTP_SINCE = "0.17.0"

#: The model-specific ``--speculative-config`` method before the generic "mtp" (vllm/config/speculative.py).
MTP_METHODS: dict[str, str] = {
    "Qwen3_5ForConditionalGeneration": "qwen3_5_mtp",
    "Qwen3_5MoeForConditionalGeneration": "qwen3_5_mtp",
    "Qwen3_5ForCausalLM": "qwen3_5_mtp",
    "Qwen3_5MoeForCausalLM": "qwen3_5_mtp",
    "Qwen3NextForCausalLM": "qwen3_next_mtp",
    "DeepseekV3ForCausalLM": "deepseek_mtp",
    "Glm4MoeForCausalLM": "glm4_moe_mtp",
    "MiMoForCausalLM": "mimo_mtp",
}


def vllm_mtp_method(spec: ModelSpec, version: str | None) -> str:
    """`mtp` on vLLM releases that have the generic name; the model-specific name before."""
    if at_least(version, VLLM_GENERIC_MTP_SINCE) is not False:
        return "mtp"
    return next((MTP_METHODS[a] for a in spec.architectures if a in MTP_METHODS), "mtp")


def fp8_below_native(cc: tuple[int, int]) -> tuple[str, str]:
    """FP8 weights on a GPU without FP8 tensor cores (below sm89)."""
    cc_text = f"sm{cc[0]}{cc[1]}"
    if cc >= (7, 5):
        return "weight_only", (
            f"vLLM runs FP8 on {cc_text} as weight-only W8A16 through Marlin kernels (slower compute than sm89+)"
        )
    return "unsupported", f"vLLM's FP8 needs sm75+ (Marlin weight-only) and sm89+ for W8A8; this GPU is {cc_text}"
