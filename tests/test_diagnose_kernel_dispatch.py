"""vLLM's kernel dispatch saying its wheel has no kernel for this GPU, in each wording its releases print (written
fresh from the strings of vllm-0.11.0's _C.abi3.so and vLLM 0.10.2's NVFP4 MoE path, vllm-project/vllm#24921): the
quantized GEMMs are the quantization's (the driver named as the alternative), any other kernel the GPU's."""

from __future__ import annotations

import pytest

from bot.diagnose import diagnose

_PREFIX = "(EngineCore_DP0 pid=79) ERROR 09-15 21:45:00 [core.py:719] NotImplementedError: "


@pytest.mark.parametrize("message,kernel,capability", [
    ("No compiled cutlass_scaled_mm for CUDA device capability: 89", "cutlass_scaled_mm", "89"),
    ("No compiled cutlass_scaled_mm for a compute capability less than CUDA device capability: 121",
     "cutlass_scaled_mm", "121"),
    ("No compiled get_cutlass_moe_mm_data: no cutlass_scaled_mm kernel for CUDA device capability: 120",
     "get_cutlass_moe_mm_data", "120"),
])
def test_a_quantized_gemm_without_a_kernel_for_the_gpu_is_the_quantization(message: str, kernel: str,
                                                                           capability: str) -> None:
    result = diagnose(_PREFIX + message, exit_code=1)
    assert result.category == "quantization_unsupported"
    assert result.alternatives == ["cuda_arch_or_driver"]
    assert f"capability {capability}" in result.cause and kernel in result.cause


def test_another_kernel_without_a_build_for_the_gpu_is_the_gpu() -> None:
    result = diagnose(_PREFIX + "No compiled cutlass_sparse_compress for a compute capability less than CUDA device "
                      "capability: 75", exit_code=1)
    assert result.category == "cuda_arch_or_driver"
    assert "cutlass_sparse_compress" in result.cause and "75" in result.cause
