"""SGLang's version- and GPU-dependent knowledge (LAUNCH_FLAGS.md §1.4, §3)."""

from __future__ import annotations


def fp8_below_native(cc: tuple[int, int]) -> tuple[str, str]:
    """FP8 weights on a GPU without FP8 tensor cores (below sm89): SGLang has no fallback kernels."""
    return "unsupported", (
        f"SGLang's FP8 kernels need sm89+; on sm{cc[0]}{cc[1]} they fail with \"type fp8e4nv not supported in this "
        'architecture"'
    )
