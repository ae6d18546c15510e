"""Failures the diagnoser knew, in the shapes another wrapper or another accelerator gives them (written fresh):
oneCCL's own error tag on Intel GPUs (its logger prints "|CCL_ERROR| <file>:<line> <function>: ..."); vLLM's custom
all-reduce check (csrc/custom_all_reduce.cuh CUDACHECK, "Failed: <file>:<line> '<CUDA error>'" in builds before
"Cuda error" was added to it) relayed at INFO by a serving wrapper; vLLM's start-up memory check wrapped by hand
after "desired" (vllm/v1/worker/gpu_worker.py: "Free memory on device (X/Y GiB) on startup is less than desired GPU
memory utilization (U, Z GiB)")."""

from __future__ import annotations

from bot.diagnose import diagnose


def test_oneccl_s_error_tag_is_the_collective_library_with_its_own_debug_step() -> None:
    log = ("(RayWorkerWrapper pid=4120) 2025:03:02-10:11:12:(4120) |CCL_ERROR| atl_ofi_comm.cpp:301 init_transport: "
           "condition !ret failed\n"
           "(RayWorkerWrapper pid=4120) ERROR 03-02 10:11:12 worker_base.py:386] Error executing method init_device. "
           "This might cause deadlock in distributed execution.\n")
    result = diagnose(log, exit_code=1)
    assert result.category == "nccl_error"
    assert "oneCCL" in result.cause
    assert any("CCL_LOG_LEVEL=debug" in step for step in result.next_steps)
    assert not any("NCCL_DEBUG" in step for step in result.next_steps)


def test_the_custom_all_reduce_check_relayed_at_info_is_the_gpus_shared_buffers() -> None:
    line = "2025-04-23T03:35:43.635Z  INFO dynamo_engine_vllm::worker: VLLM: Failed: " \
           "/workspace/csrc/custom_all_reduce.cuh:368 'invalid argument'"
    result = diagnose("Capturing CUDA graph shapes: 100%|##########| 35/35 [01:17<00:00,  2.20s/it]\n"
                      + "\n".join([line] * 3) + "\n")
    assert result.category == "nccl_error"
    assert "'invalid argument'" in result.cause
    assert result.fix is not None and "--disable-custom-all-reduce" in result.fix.overrides.extra_args


def test_the_start_up_memory_check_wrapped_after_desired_is_the_busy_gpu() -> None:
    log = ("ValueError: Free memory on device (8.0/64.0 GiB) on startup is less than desired\n"
           "GPU memory utilization (0.9, 57.6 GiB). Decrease GPU memory utilization or\n"
           "reduce GPU memory used by other processes.\n")
    result = diagnose(log, exit_code=1)
    assert result.category == "other"
    assert "only 8.0 of 64.0 GiB is free" in result.cause
    assert any("other processes hold 56.0 GiB" in step for step in result.next_steps)
