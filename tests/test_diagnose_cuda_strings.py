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
    ("invalid device ordinal", ("bad_argument",)),  # a GPU id past the visible ones: the launch's setting
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


@pytest.mark.parametrize("log,category", [
    # A kernel library's C++ check names no model: the architecture is the GPU's (DeepGEMM csrc/apis/*.hpp
    # DG_HOST_ASSERT / DG_HOST_UNREACHABLE "Unsupported architecture").
    ("RuntimeError: Assertion error (/deepgemm/csrc/apis/gemm.hpp:91): Unsupported architecture", "cuda_arch_or_driver"),
    ("AssertionError: Only SM 9.x is supported", "cuda_arch_or_driver"),
    ("AssertionError: Only SM 10.x, 11.x and 12.x are supported", "cuda_arch_or_driver"),
    # The NVIDIA container toolkit (libnvidia-container) refusing the container before the engine starts.
    ("docker: Error response from daemon: failed to create task for container: failed to create shim task: OCI "
     "runtime create failed: runc create failed: unable to start container process: error during container init: "
     "error running hook #0: error running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\n"
     "nvidia-container-cli: initialization error: nvml error: driver not loaded: unknown.", "cuda_arch_or_driver"),
    # vLLM's linear layers wrap the allocation's OOM (model_executor/layers/linear.py).
    ("RuntimeError: Failed to create unquantized linear weights. This may be caused by insufficient memory to "
     "allocate the weight.", "gpu_oom_weights"),
    # A model class's check of a quantization method, raised as AttributeError (vllm model_loader/bitsandbytes_loader).
    ("AttributeError: Model Gemma3ForConditionalGeneration does not support BitsAndBytes quantization yet.",
     "quantization_unsupported"),
    # Ascend CANN: its collective library's error code (EI...), and a bare error report that must not read healthy.
    ("[rank0]: EI0006: [PID: 4242] 2026-01-01-00:00:00.000.000 Getting socket times out.", "nccl_error"),
])
def test_accelerator_and_kernel_library_wordings(log: str, category: str) -> None:
    result = diagnose(log)
    assert result.category == category, result.cause


def test_an_ascend_error_report_is_never_read_as_a_healthy_start() -> None:
    log = ("INFO 01-01 00:00:00 [platform.py:100] Automatically detected platform npu.\n"
           "EZ9999: [PID: 4242] 2026-01-01-00:00:00.000.000 The error from device(chipId:0, dieId:0), serial number "
           "is 7, an exception occurred during AICORE operator execution.")
    assert diagnose(log).category != "none"


def test_a_source_files_name_in_a_message_is_not_a_setting() -> None:
    # An assertion inside a kernel's workspace accounting names its file and function, not a launch setting.
    log = ("AssertionError: Workspace is locked but allocation from 'paged_attn.py:120:_decode_step' requires "
           "1.50 MB, current size is 1.00 MB")
    assert diagnose(log).category != "bad_argument"


@pytest.mark.parametrize("line,step_words", [
    ("RuntimeError: CUDA error: system not yet initialized", "nvidia-fabricmanager"),
    ("Failed to initialize NVML: Driver/library version mismatch", "reboot"),
    ("RuntimeError: No CUDA GPUs are available", "--gpus all"),
    ("nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.8, please update your driver to a newer "
     "version, or use an earlier cuda container: unknown.", "upgrade the NVIDIA driver"),
    ("RuntimeError: Assertion error (/deepgemm/csrc/apis/gemm.hpp:91): Unsupported architecture",
     "VLLM_USE_DEEP_GEMM=0"),
])
def test_the_driver_and_architecture_advice_follows_what_the_message_says(line: str, step_words: str) -> None:
    result = diagnose(line, exit_code=1)
    assert result.category == "cuda_arch_or_driver"
    assert step_words in result.next_steps[0], result.next_steps
