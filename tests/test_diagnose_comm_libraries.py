"""The communication libraries' own failures, in the words their sources print (written fresh, not from the corpus).

- vLLM's NCCL wrapper (distributed/device_communicators/pynccl_wrapper.py) logs "Failed to load NCCL library from
  %s. It is expected if you are not running on NVIDIA/AMD GPUs. Otherwise, the nccl library might not exist, be
  corrupted or it does not support the current platform %s. ..." and re-raises: after the server is up too (TRL's
  vllm-serve builds its weight-sync communicator on request), it is a crash, not a healthy log.
- CUDA check macros quote the file they are in: vLLM's csrc/custom_all_reduce.cuh CUDACHECK prints "Failed: Cuda error
  %s:%d '%s'", DeepEP's EPException "Failed: CUDA error <file>:<line> '<error>'". That file is where the error was
  raised, as an innermost frame would say (a kernel crash, an illegal memory access, keeps its own reading); torch's
  NCCL watchdog (ProcessGroupNCCL.cpp) only reports another kernel's error and places nothing.
"""

from __future__ import annotations

from bot.diagnose import diagnose

_UP = ('INFO:     127.0.0.1:41200 - "GET /health HTTP/1.1" 200 OK\n'
       'INFO:     127.0.0.1:41202 - "POST /init_communicator/ HTTP/1.1" 200 OK\n')


def test_an_nccl_library_that_does_not_load_is_a_crash_even_after_the_server_came_up() -> None:
    log = _UP + ("(VllmWorker rank=0 pid=2211) INFO 03-02 10:01:12 [utils.py:1045] Found nccl from environment variable "
                 "VLLM_NCCL_SO_PATH=/opt/nccl/lib/libnccl.so.2.19.3\n"
                 "(VllmWorker rank=0 pid=2211) ERROR 03-02 10:01:12 [pynccl_wrapper.py:229] Failed to load NCCL library "
                 "from /opt/nccl/lib/libnccl.so.2.19.3. It is expected if you are not running on NVIDIA/AMD GPUs."
                 "Otherwise, the nccl library might not exist, be corrupted or it does not support the current "
                 "platform Linux-5.15.0-x86_64-with-glibc2.35.")
    result = diagnose(log)
    assert result.category == "nccl_error"
    assert "missing_dependency" in result.alternatives
    assert "/opt/nccl/lib/libnccl.so.2.19.3" in result.cause
    assert any("ldd /opt/nccl/lib/libnccl.so.2.19.3" in step and "VLLM_NCCL_SO_PATH" in step
               for step in result.next_steps)


def test_a_cuda_error_deepep_raises_in_its_buffer_set_up_is_the_communication() -> None:
    log = ("[2026-02-11 08:00:01 DP3 TP3 EP3] Scheduler hit an exception: Traceback (most recent call last):\n"
           '  File "/sgl-workspace/sglang/python/sglang/srt/layers/moe/token_dispatcher/deepep.py", line 96, in '
           "get_deepep_buffer\n"
           "    cls._buffer = Buffer(group, num_nvl_bytes, num_rdma_bytes)\n"
           "RuntimeError: Failed: CUDA error /sgl-workspace/DeepEP/csrc/deep_ep.cpp:98 'invalid argument'")
    assert diagnose(log).category == "nccl_error"


def test_the_nccl_watchdog_reporting_another_kernel_s_crash_stays_a_kernel_crash() -> None:
    log = ("[rank1]:[E302 10:02:11.551200914 ProcessGroupNCCL.cpp:1899] [PG ID 2 PG GUID 3 Rank 1] Process group "
           "watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered")
    assert diagnose(log).category == "other"


def test_nccl_s_infiniband_verbs_refused_memory_is_the_transport_not_the_host_s_ram() -> None:
    # nccl src/misc/ibvwrap.cc: the verbs' pinned memory is capped by the locked-memory limit, not by free RAM.
    log = ("node-1:1234:5678 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>\n"
           "node-1:1234:5678 [0] misc/ibvwrap.cc:190 NCCL WARN Call to ibv_create_cq failed with error Cannot "
           "allocate memory\n")
    result = diagnose(log, exit_code=1)
    assert result.category == "nccl_error", result
    assert any("ulimit -l unlimited" in step for step in result.next_steps), result.next_steps


def test_nccl_s_infiniband_completion_in_error_and_a_missing_interface_are_nccl() -> None:
    completion = ("node-1:1234:5678 [0] transport/net_ib.cc:1041 NCCL WARN NET/IB : Got completion from peer "
                  "10.0.0.2<39876> with status=12 opcode=129 len=0 vendor err 129 (Recv) hca mlx5_0\n")
    interface = "node-1:1234:5678 [0] bootstrap.cc:45 NCCL WARN Bootstrap : no socket interface found\n"
    assert diagnose(completion, exit_code=1).category == "nccl_error"
    assert diagnose(interface, exit_code=1).category == "nccl_error"


def test_the_store_based_barrier_timing_out_is_a_collective_timeout() -> None:
    # torch/distributed/distributed_c10d.py _store_based_barrier
    log = ("RuntimeError: Timed out initializing process group in store based barrier on rank 1, for key: "
           "store_based_barrier_key:1 (world_size=2, num_workers_joined=1, timeout=0:30:00)\n")
    result = diagnose(log, exit_code=1)
    assert result.category == "nccl_error" and "timed out" in result.cause, result
