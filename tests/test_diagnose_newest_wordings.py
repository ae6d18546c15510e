"""vLLM 0.34.0's own wordings for checks the diagnoser knew in older words (the wheel's source, vllm-0.34.0 from
PyPI, tools/engine_messages/newest/): a kernel library a path requires, an extension's bindings missing, experts or
heads that must split over the parallel ranks, an AMD generation a feature needs, the driver's library, a context
that cannot fit, and settings checks worded "applies only to", "expected one of", "no longer supported". Values
filled in as a log would show them."""

from __future__ import annotations

import pytest

from bot.diagnose import diagnose


@pytest.mark.parametrize("line,category", [
    ("RuntimeError: vLLM on x86 CPUs requires Triton (triton-cpu).", "missing_dependency"),
    ("ValueError: vLLM's model runner requires Triton.", "missing_dependency"),
    ("RuntimeError: MORI UMBP Python bindings are unavailable", "missing_dependency"),
    ("ValueError: MiniMax M3 MegaMoE needs num_experts=256 divisible by the EP size 6.", "tp_not_divisible"),
    ("ValueError: MORI EPv2 needs the 60 experts to split evenly over 8 expert-parallel ranks", "tp_not_divisible"),
    ("ValueError: Ricursive requires num_attention_heads (28) and num_key_value_heads (4) to be divisible by the "
     "tensor parallel size (8).", "tp_not_divisible"),
    ("NotImplementedError: Step-5 sparse attention on ROCm requires CDNA3 or newer.", "cuda_arch_or_driver"),
    ("RuntimeError: Could not load libcuda.so.1. The GPU driver library is required for VMM-backed tensors.",
     "cuda_arch_or_driver"),
    ("ValueError: Cannot auto-fit max_model_len: not enough GPU memory available to serve even a single token. "
     "Free memory: 0.41 GiB", "kv_cache_insufficient"),
    ('ValueError: cpu_hugepage_block_size applies only to kv_offload_backend="cpu".', "bad_argument"),
    ("ValueError: VLLM_USE_V2_MODEL_RUNNER=0 is no longer supported: Model Runner V1 has been removed. Unset this "
     "variable.", "bad_argument"),
])
def test_vllm_0_34_wordings(line: str, category: str) -> None:
    log = f"(EngineCore pid=812) ERROR 11-28 10:02:11 [core.py:1011] {line}\n"
    assert diagnose(log, exit_code=1).category == category


def test_the_driver_library_in_the_loader_s_own_words_gets_the_driver_step() -> None:
    result = diagnose("RuntimeError: Could not load libcuda.so.1. The GPU driver library is required for VMM-backed "
                      "tensors.\n", exit_code=1)
    assert "libcuda.so.1" in result.cause
    assert any("nvidia-smi" in step for step in result.next_steps)


@pytest.mark.parametrize("line", [
    # an attention path asking for the attention backend of that name, not for the package (sgl-project/sglang
    # #28171's "Bidirectional attention for image tokens requires TritonAttnBackend.")
    "ValueError: Bidirectional attention for image tokens requires TritonAttnBackend.",
    "ValueError: Sliding window attention for audio tokens requires FlashInfer.",
])
def test_an_attention_path_requiring_a_backend_is_not_a_missing_package(line: str) -> None:
    assert diagnose(line + "\n", exit_code=1).category != "missing_dependency"
