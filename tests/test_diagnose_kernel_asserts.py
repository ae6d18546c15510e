"""A GPU kernel's failed assert, as the kernel prints it, is a kernel crash even when nothing else follows.

CUDA's device-side assert prints "<file>.cu:<line>: <function>: block: [x,y,z], thread: [x,y,z] Assertion `<expr>`
failed." for each failing thread (PyTorch's ATen kernels, e.g. IndexKernel.cu's index bound check); HIP's prints
"<file>.hip:<line>: <function>: Device-side assertion `<expr>' failed." (ROCm/vllm#527, vLLM's ROCm skinny GEMMs).
A tail cut before the RuntimeError that follows ("CUDA error: device-side assert triggered") was read as a server
still starting.
"""

from __future__ import annotations

import pytest

from bot.diagnose import diagnose

CUDA = ("/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:94: operator(): block: [12,0,0], thread: [64,0,0] "
        "Assertion `-sizes[i] <= index && index < sizes[i] && \"index out of bounds\"` failed.")
HIP = ("/app/vllm/csrc/rocm/skinny_gemms.hip:497: void wvSplitK_hf_sml_(const int, const int, const scalar_t *) "
       "[scalar_t = __hip_bfloat16, THRDS = 64]: Device-side assertion `false' failed.")
START = "INFO 03-10 09:12:01 [gpu_model_runner.py:1843] Model loading took 0.93 GiB and 4.1 seconds\n"


@pytest.mark.parametrize("assert_line", [CUDA, HIP], ids=["cuda", "hip"])
def test_a_kernel_assert_is_a_kernel_crash(assert_line: str) -> None:
    diagnosis = diagnose(START + "\n".join([assert_line] * 3) + "\n")
    assert diagnosis.category == "other" and "kernel crashed" in diagnosis.cause, diagnosis
    assert diagnosis.evidence[0].text.endswith("failed.")
    assert any("CUDA_LAUNCH_BLOCKING=1" in step for step in diagnosis.next_steps)


def test_an_assert_in_host_code_is_not_a_kernel_assert() -> None:
    # (a Python assert's source line in a server that then came up is no kernel's)
    log = START + ("INFO 03-10 09:12:09 [launcher.py:29] Available routes are:\n"
                   "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)\n"
                   "WARNING 03-10 09:12:10 [utils.py:12] tokenizer.py:41: Assertion `vocab` checked lazily\n")
    assert diagnose(log).category == "none"
