"""vLLM's memory profile is a whole forward pass: an error raised under it is not the KV cache unless it says so.

``determine_available_memory`` (vllm/v1/worker/gpu_worker.py, relayed by vllm/v1/executor/multiproc_executor.py
``get_response``: "Worker failed with error '...', please check the stack trace above for the root cause") runs the
model on a dummy batch. A dtype or shape error raised there is the model's; an error in the collectives it runs is
the collective library's, Intel's oneCCL, AMD's RCCL and Huawei's HCCL as much as NVIDIA's NCCL. The tails below are
written in vLLM 0.11's own wording (its executor's relay and its EngineCore's "EngineCore failed to start.").
"""

from __future__ import annotations

import pytest

from bot.diagnose import diagnose

_PREFIX = "(EngineCore_DP0 pid=122) ERROR 12-19 17:42:58 [core.py:842]"
_FRAMES = [
    'Traceback (most recent call last):',
    '  File "/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 833, in run_engine_core',
    '    engine_core = EngineCoreProc(*args, **kwargs)',
    '  File "/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 210, in _initialize_kv_caches',
    '    available_gpu_memory = self.model_executor.determine_available_memory()',
    '  File "/usr/lib/python3.12/site-packages/vllm/v1/executor/abstract.py", line 126, in determine_available_memory',
    '    return self.collective_rpc("determine_available_memory")',
    '  File "/usr/lib/python3.12/site-packages/vllm/v1/executor/multiproc_executor.py", line 358, in collective_rpc',
    '    return aggregate(get_response())',
    '  File "/usr/lib/python3.12/site-packages/vllm/v1/executor/multiproc_executor.py", line 341, in get_response',
    '    raise RuntimeError(',
]


def relayed(inner: str) -> str:
    message = f"RuntimeError: Worker failed with error '{inner}', please check the stack trace above for the root cause"
    return "\n".join(f"{_PREFIX} {line}" for line in [*_FRAMES, message]) + "\n"


@pytest.mark.parametrize("inner", [
    "expected mat1 and mat2 to have the same dtype, but got: float != c10::Half",
    "shape '[2048, 2048]' is invalid for input of size 16777216",
    "index 151936 is out of bounds for dimension 0 with size 151680",
])
def test_a_model_error_in_the_memory_profile_is_not_the_kv_cache(inner: str) -> None:
    diagnosis = diagnose(relayed(inner))
    assert diagnosis.category == "other", diagnosis
    assert inner[:30] in diagnosis.evidence[0].text


@pytest.mark.parametrize("inner", [
    "oneCCL: ze_call.cpp:28 do_call: EXCEPTION : ze error at zeMemOpenIpcHandle",
    "RCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
])
def test_another_vendors_collective_library_is_multi_gpu_communication(inner: str) -> None:
    assert diagnose(relayed(inner)).category == "nccl_error"


def test_a_memory_error_in_the_profile_is_still_the_kv_cache_area() -> None:
    # (the area's own words: a profile that found too little memory left for the cache)
    diagnosis = diagnose(relayed("Error in memory profiling. Initial free memory 3.1 GiB, current free memory 0.2 "
                                 "GiB. This happens when other processes sharing the same container release GPU "
                                 "memory while vLLM is profiling during initialization."))
    assert diagnosis.category == "kv_cache_insufficient", diagnosis


def test_a_tail_cut_inside_the_profile_is_still_the_kv_cache() -> None:
    cut = "\n".join(f"{_PREFIX} {line}" for line in _FRAMES[:7]) + "\n"
    assert diagnose(cut).category == "kv_cache_insufficient"
