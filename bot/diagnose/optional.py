"""Optional imports an engine reports and carries on from: never a missing dependency."""

from __future__ import annotations

from bot.diagnose.types import r

#: Engines report optional imports that failed and carry on (SGLang: "Ignore import error when loading
#: sglang.srt.models.x: No module named ..."; "torchcodec is not installed; audio inputs will fail at request time").
#: ... or installing it only for speed (vLLM 0.4's attention selector: "Cannot use FlashAttention-2 backend because
#: the flash_attn package is not found. Please install it for better performance.", then "Using XFormers backend.").
OPTIONAL_WORDS = (r"Ignore import error|will fail at request time|fall(?:ing)? ?back|\boptional\b"
                  r"|is not installed,? (?:so|using|skipping)|for better performance")
OPTIONAL_IMPORT = r(OPTIONAL_WORDS)
