"""The CUDA runtime's error strings read the same whichever macro prints them.

The texts are the CUDA runtime's own (``cudaGetErrorString``, cuda_runtime_api.h / driver_types.h of CUDA 12); the
wrappers are how real code quotes them: torch's ``CUDA error: <text>`` (c10/cuda/CUDAException.h), torch's
``CUDA driver error: <text>`` (its driver API check), vLLM's custom all-reduce ``Failed: Cuda error <file>:<line>
'<text>'`` (csrc/custom_all_reduce.cuh, CUDACHECK) and torch 2.8's ``torch.AcceleratorError``. A diagnosis keyed on
one wrapper only would call the same failure a crash in one log and healthy in the next.
"""

from __future__ import annotations

import pytest

from bot.diagnose import diagnose

WRAPPERS = (
    "RuntimeError: CUDA error: {text}",
    "RuntimeError: CUDA driver error: {text}",
    "Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:307 '{text}'",
    "torch.AcceleratorError: CUDA error: {text}",
)
MEMORY = ("gpu_oom_weights", "kv_cache_insufficient", "cuda_graph_oom")

TEXTS = (
    ("out of memory", MEMORY),
    ("no kernel image is available for execution on the device", ("cuda_arch_or_driver",)),
    ("invalid device ordinal", ("cuda_arch_or_driver",)),
    ("system not yet initialized", ("cuda_arch_or_driver",)),  # 802: the fabric manager is not running
    ("an illegal memory access was encountered", ("other",)),
    ("misaligned address", ("other",)),
    ("unspecified launch failure", ("other",)),
)


@pytest.mark.parametrize("wrapper", WRAPPERS)
@pytest.mark.parametrize("text,categories", TEXTS)
def test_cuda_error_text_is_read_whatever_wraps_it(wrapper: str, text: str, categories: tuple[str, ...]) -> None:
    result = diagnose(wrapper.format(text=text))
    assert result.category in categories, (wrapper, result.category, result.cause)
    assert result.evidence and text in result.evidence[0].text


@pytest.mark.parametrize("line", [
    "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 60.96 GiB total capacity)",
    "RuntimeError: [Error]: Failed to apply for memory.",  # torch_npu's allocator
    "EL0004: [PID: 1234] 2026-01-01-00:00:00.000.000 Failed to allocate memory.",  # CANN's error code
])
def test_accelerator_memory_refusals_are_out_of_memory(line: str) -> None:
    assert diagnose(line).category in MEMORY


@pytest.mark.parametrize("line,category", [
    ("MemoryError: std::bad_alloc", "host_oom_killed"),
    ("terminate called after throwing an instance of 'std::bad_alloc'\n  what():  std::bad_alloc", "host_oom_killed"),
    ("RuntimeError: CUDA error: out of memory\nMemoryError", "gpu_oom_weights"),  # the GPU's, named first
])
def test_host_allocation_failures(line: str, category: str) -> None:
    result = diagnose(line)
    assert result.category == category, result.cause
    if category == "host_oom_killed":
        assert result.confidence <= 0.6 and "other" in result.alternatives


def test_capability_refusal_without_numbers_names_the_generation() -> None:
    result = diagnose("RuntimeError: FlashAttention only supports Ampere GPUs or newer.")
    assert result.category == "cuda_arch_or_driver"
    assert "Ampere" in result.cause and "?" not in result.cause and ", the GPU has" not in result.cause
