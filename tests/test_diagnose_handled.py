"""Failures the printing code catches and goes on from, and wordings of kernel builds, graphs and GPU transports.

Sources: vLLM's chat serving warm-up (vllm/entrypoints/openai serving_chat.py ``warmup``: ``logger.exception("Chat
template warmup failed")`` and the start goes on), CPython's unraisable hook ("Exception ignored in: ...",
sys.unraisablehook), SGLang's piecewise CUDA graph runner, NVSHMEM's transports (src/host/transport/transport.cpp,
src/modules/transport/ibrc/ibrc.cpp), AITER's JIT (aiter/jit/core.py), ptxas, vLLM's Marlin shape checks.
"""

from __future__ import annotations

import pytest

from bot.diagnose import diagnose

_VLLM = "/usr/local/lib/python3.12/dist-packages/vllm"
_START = """\
(APIServer pid=7) INFO 03-04 06:44:50 [api_server.py:1000] vLLM API server version 0.17.0
(EngineCore_DP0 pid=90) INFO 03-04 06:45:01 [gpu_model_runner.py:2050] Model loading took 4.1 GiB and 9.3 seconds
(EngineCore_DP0 pid=90) INFO 03-04 06:45:09 [kv_cache_utils.py:1000] GPU KV cache size: 300,000 tokens"""
_WARMUP_FAILED = f"""\
(APIServer pid=7) ERROR 03-04 06:45:13 [serving_chat.py:217] Chat template warmup failed
(APIServer pid=7) ERROR 03-04 06:45:13 [serving_chat.py:217] Traceback (most recent call last):
(APIServer pid=7) ERROR 03-04 06:45:13 [serving_chat.py:217]   File "{_VLLM}/entrypoints/openai/serving_chat.py", line 204, in warmup
(APIServer pid=7) ERROR 03-04 06:45:13 [serving_chat.py:217]     await self._preprocess_chat(
(APIServer pid=7) ERROR 03-04 06:45:13 [serving_chat.py:217] jinja2.exceptions.UndefinedError: 'messages' is undefined"""


def test_a_caught_warm_up_failure_does_not_make_a_start_a_crash() -> None:
    assert diagnose(f"{_START}\n{_WARMUP_FAILED}").category == "none"
    ready = "(APIServer pid=7) INFO:     Application startup complete."
    assert diagnose(f"{_START}\n{_WARMUP_FAILED}\n{ready}").category == "none"


def test_a_real_crash_after_a_caught_failure_is_still_read() -> None:
    crash = ("(EngineCore_DP0 pid=90) ERROR 03-04 06:45:20 [core.py:700] torch.OutOfMemoryError: CUDA out of memory. "
             "Tried to allocate 2.00 GiB.")
    assert diagnose(f"{_START}\n{_WARMUP_FAILED}\n{crash}").category in (
        "gpu_oom_weights", "kv_cache_insufficient", "cuda_graph_oom")


def test_an_exception_ignored_at_teardown_is_not_the_cause() -> None:
    log = f"""{_START}
Exception ignored in: <function Executor.__del__ at 0x7f00deadbeef>
Traceback (most recent call last):
  File "{_VLLM}/executor/executor_base.py", line 200, in __del__
    self.shutdown()
AttributeError: 'NoneType' object has no attribute 'shutdown'"""
    assert diagnose(log).category == "none"


@pytest.mark.parametrize("log,category", [
    ("[2026-06-10 13:08:34 TP0] Piecewise CUDA Graph failed with error: 'ForwardContext' object has no attribute "
     "'batch_size'", "cuda_graph_oom"),
    ("/sgl-workspace/nvshmem/src/modules/transport/ibrc/ibrc.cpp:530: non-zero status: 110 ibv_create_qp failed",
     "nccl_error"),
    ("NVSHMEM API called before NVSHMEM initialization has completed", "nccl_error"),
    ("(VllmWorkerProcess pid=31) [aiter] failed build jit [module_fmha_v3_fwd]", "jit_compile_failure"),
    ("ptxas fatal   : Value 'sm_110a' is not defined for option 'gpu-name'", "jit_compile_failure"),
    ("RuntimeError: size_k = 1368 is not divisible by tile_k_size = 128", "tp_not_divisible"),
])
def test_more_wordings(log: str, category: str) -> None:
    result = diagnose(log)
    assert result.category == category, result.cause


def test_a_transport_nvshmem_skips_is_not_a_crash() -> None:
    # NVSHMEM tries each transport and goes on with the next one; the start continues.
    log = (f"{_START}\n/build/nvshmem/src/host/transport/transport.cpp:nvshmemi_transport_init:282: init failed for "
           "transport: IBGDA\n(APIServer pid=7) INFO:     Application startup complete.")
    assert diagnose(log).category == "none"
