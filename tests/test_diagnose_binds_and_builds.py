"""A bind to an address that is not this host's, builds that failed or hung, a toolkit library that lacks a symbol.

Each log is written fresh from the real wording of the library that prints it, not copied from a corpus log:
- EADDRNOTAVAIL: strerror(99) "Cannot assign requested address" as libzmq raises it (pyzmq's ZMQError, vLLM's
  make_zmq_socket), asyncio's create_server ("[Errno 99] error while attempting to bind on address %r: %s",
  CPython Lib/asyncio/base_events.py) as uvicorn logs it, torch's c10d store ("The server socket has failed to bind
  to {}:{} (errno: {} - {}).", torch/csrc/distributed/c10d/socket.cpp); a client's failed connect is not a bind;
- CANN's compilers: "Failure_to_Compile_Op(E40021): Failed to compile Op [...]", GE's "[GraphOpt][FusedGraph]
  [RunCompile] Failed to compile graph with compiler Normal mode Op Compiler[FUNC:SubGraphCompile]";
- a compiler's command relayed at ERROR by vLLM's engine core (its "ERROR <date> [core.py:<n>]" prefix);
- py-spy's dump ("    function (path:line)") and faulthandler's ('  File "path", line N in function') under
  SGLang's scheduler watchdog ("Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)");
- torch_npu's op-API loader: "<op> or <op>GetWorkspaceSize not in libopapi.so, or libopapi.sonot found.", inside
  SGLang's capture wrapper ("Capture cuda graph failed: {e}").
"""

from __future__ import annotations

from bot.diagnose import diagnose

_VLLM = "/usr/local/lib/python3.12/dist-packages/vllm"


def test_a_bind_to_another_hosts_address_is_the_launch_setting_not_a_taken_port() -> None:
    logs = (
        f"""\
(APIServer pid=71) Traceback (most recent call last):
(APIServer pid=71)   File "{_VLLM}/utils/network_utils.py", line 201, in make_zmq_socket
(APIServer pid=71)     socket.bind(path)
(APIServer pid=71)   File "/usr/local/lib/python3.12/dist-packages/zmq/sugar/socket.py", line 311, in bind
(APIServer pid=71)     super().bind(addr)
(APIServer pid=71) zmq.error.ZMQError: Cannot assign requested address (addr='tcp://192.168.40.7:5557')""",
        """\
INFO:     Started server process [4412]
INFO:     Waiting for application startup.
INFO:     Application startup complete.
ERROR:    [Errno 99] error while attempting to bind on address ('10.1.2.3', 30000): cannot assign requested address
INFO:     Waiting for application shutdown.""",
        """\
[W1203 04:10:11.120 socket.cpp:752] [c10d] The server socket has failed to bind to 172.31.9.40:29500 (errno: 99 - Cannot assign requested address).
[E1203 04:10:11.121 socket.cpp:793] [c10d] The server socket has failed to listen on any local network address.
torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. port: 29500, useIpv6: 0, code: -99, name: EADDRNOTAVAIL, message: address not available""",
    )
    for log in logs:
        result = diagnose(log)
        assert result.category == "bad_argument", (log, result)
        assert "not one of this host's" in result.cause


def test_a_client_that_could_not_connect_is_not_a_bind_to_another_host() -> None:
    log = ("[W1203 04:10:11.120 socket.cpp:464] [c10d] The client socket has failed to connect to "
           "[node-2]:29500 (errno: 99 - Cannot assign requested address).\n"
           "torch.distributed.DistNetworkError: The client socket has failed to connect to any network address of "
           "(node-2, 29500). The client socket has failed to connect to node-2:29500 (errno: 99 - Cannot assign "
           "requested address).")
    assert diagnose(log).category != "bad_argument"


def test_the_advice_for_a_foreign_address_names_it_and_the_host_flag() -> None:
    log = ("(APIServer pid=71) zmq.error.ZMQError: Cannot assign requested address "
           "(addr='tcp://192.168.40.7:5557')")
    result = diagnose(log, command="vllm serve /models/qwen --host 192.168.40.7 --port 8000")
    step = result.next_steps[0]
    assert "tcp://192.168.40.7:5557" in step and "--host 192.168.40.7" in step and "0.0.0.0" in step


def test_ascends_compilers_failing_are_a_kernel_build() -> None:
    for line in (
        "[PID: 9021] 2026-03-11-08:02:41.114.201 Failure_to_Compile_Op(E40021): Failed to compile Op "
        "[Transpose_12,MatMul_13]. (oppath: [Compile /usr/local/Ascend/ascend-toolkit/8.2.RC1/opp/built-in/op_impl/"
        "ai_core/tbe/impl/dynamic/transpose.py failed with errormsg/stack: ...])",
        "        [GraphOpt][FusedGraph][RunCompile] Failed to compile graph with compiler Normal mode Op Compiler"
        "[FUNC:SubGraphCompile][FILE:fe_graph_optimizer.cc][LINE:1402]",
    ):
        result = diagnose(f"ERROR 03-11 08:02:41 [worker.py:88] {line}\nERROR 03-11 08:02:41 [worker.py:88] ")
        assert result.category == "jit_compile_failure", (line, result)
        assert "CANN" in result.next_steps[0] and "nvcc" not in result.next_steps[0]


def test_a_compilers_command_is_a_failed_build_only_when_relayed_as_an_error() -> None:
    command = ("/usr/local/cuda-12.8/bin/nvcc --generate-dependencies-with-compile --dependency-output "
               "gemm_sm100/gemm_bf16.cuda.o.d -isystem /usr/local/cuda/include --compiler-options=-fPIC "
               "-gencode=arch=compute_100a,code=sm_100a -c gemm_bf16.cu -o gemm_bf16.cuda.o")
    failed = diagnose(f"(EngineCore_DP0 pid=212) ERROR 02-14 10:11:12 [core.py:708] {command}")
    assert failed.category == "jit_compile_failure", failed
    building = diagnose(f"(EngineCore_DP0 pid=212) INFO 02-14 10:11:12 [core.py:708] {command}\n"
                        f"(APIServer pid=1) INFO 02-14 10:12:40 [api_server.py:1880] Starting vLLM API server 0 on "
                        f"http://0.0.0.0:8000")
    assert building.category != "jit_compile_failure", building


def test_a_watchdog_whose_stack_is_in_a_kernel_build_is_the_build() -> None:
    watchdog = "[2026-04-02 11:00:03 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)"
    for stack in (
        ["Thread 0x7F3A2C1FF740 (active): \"MainThread\"",
         "    _run_ninja (flashinfer/jit/cpp_ext.py:241)",
         "    build_and_load (flashinfer/jit/core.py:301)",
         "    get_batch_prefill_module (flashinfer/prefill.py:322)"],
        ["Current thread 0x00007f3a2c1ff740 (most recent call first):",
         '  File "/usr/local/lib/python3.12/dist-packages/torch/utils/cpp_extension.py", line 2503 in _run_ninja_build',
         '  File "/usr/local/lib/python3.12/dist-packages/torch/utils/cpp_extension.py", line 1709 in _jit_compile'],
    ):
        result = diagnose("\n".join([watchdog] + stack))
        assert result.category == "jit_compile_failure", (stack, result)
        assert "lock" in result.next_steps[0]


def test_a_watchdog_whose_stack_is_elsewhere_stays_a_hang() -> None:
    log = "\n".join([
        "[2026-04-02 11:00:03 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)",
        "    all_reduce (sglang/srt/distributed/device_communicators/pynccl.py:144)",
        "    forward (sglang/srt/layers/linear.py:1312)"])
    result = diagnose(log)
    assert result.category != "jit_compile_failure", result


def test_a_toolkit_library_without_the_called_op_is_the_toolkit_even_inside_the_capture() -> None:
    log = """\
  File "/usr/local/python3.11/site-packages/sglang/srt/model_executor/cuda_graph_runner.py", line 402, in __init__
    raise Exception(
Exception: Capture cuda graph failed: aclnnMoeGatingTopK or aclnnMoeGatingTopKGetWorkspaceSize not in libopapi.so, or libopapi.sonot found.
Possible solutions:
1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)"""
    result = diagnose(log)
    assert result.category == "missing_dependency", result
    assert "libopapi.so" in result.next_steps[0] and "aclnnMoeGatingTopK" in result.next_steps[0]


def test_no_quantized_gemm_for_the_gpu_is_the_quantization() -> None:
    # vLLM csrc/quantization/w8a8/cutlass/scaled_mm_entry.cu, on a capability its wheel has no scaled_mm for.
    result = diagnose("(EngineCore_DP0 pid=88) NotImplementedError: No compiled cutlass_scaled_mm for a compute "
                      "capability less than CUDA device capability: 61")
    assert result.category == "quantization_unsupported", result
    assert "61" in result.cause and "bf16" in result.next_steps[0]


_SERVING = """\
(APIServer pid=1) INFO 03-02 10:00:00 [api_server.py:1880] Starting vLLM API server 0 on http://0.0.0.0:8000
(APIServer pid=1) INFO:     Application startup complete.
(APIServer pid=1) INFO 03-02 10:05:02 [loggers.py:127] Engine 000: Avg prompt throughput: 812.3 tokens/s, Avg generation throughput: 95.1 tokens/s, Running: 4 reqs, Waiting: 0 reqs, GPU KV cache usage: 3.1%, Prefix cache hit rate: 0.0%
(APIServer pid=1) INFO 03-02 10:05:12 [loggers.py:127] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 4 reqs, Waiting: 0 reqs, GPU KV cache usage: 3.1%, Prefix cache hit rate: 0.0%
"""
_STALL = ("(EngineCore_DP0 pid=310) INFO 03-02 10:06:12 [shm_broadcast.py:466] No available shared memory broadcast "
          "block found in 60 second. This typically happens when some processes are hanging or doing some "
          "time-consuming work (e.g. compilation).")


def test_a_worker_that_stops_answering_while_serving_is_a_hung_engine_not_a_healthy_one() -> None:
    result = diagnose(_SERVING + _STALL + "\n" + _STALL)
    assert result.category == "other" and "hung" in result.cause, result
    assert "py-spy dump" in result.next_steps[0]


def test_the_same_notice_during_a_long_start_up_step_is_no_crash() -> None:
    starting = ("(EngineCore_DP0 pid=310) INFO 03-02 10:01:40 [backends.py:548] Compiling a graph for dynamic shape "
                "takes 96.12 s\n" + _STALL)
    assert diagnose(starting).category == "none"


_LOADER = "/home/ml/venv/lib/python3.10/site-packages/vllm/model_executor/model_loader"


def test_a_traceback_cut_inside_its_last_frame_is_placed_by_the_call_the_frame_above_made() -> None:
    # The paste ends inside the innermost frame's own line ("in get_model_arch"): the frame above says what it
    # called (vllm model_loader/utils.py initialize_model -> get_model_architecture, the architecture registry).
    log = f"""\
Traceback (most recent call last):
  File "{_LOADER}/base_loader.py", line 44, in load_model
    model = initialize_model(vllm_config=vllm_config,
  File "{_LOADER}/utils.py", line 53, in initialize_model
    model_class, _ = get_model_architecture(model_config)
  File "{_LOADER}/utils.py", line 251, in get_model_arch"""
    assert diagnose(log).category == "unsupported_architecture"


_HUB_RETRY_LINES = """\
(APIServer pid=7) '(ReadTimeoutError("HTTPSConnectionPool(host='huggingface.co', port=443): Read timed out. (read timeout=10)"), '(Request ID: 5d1e)')' thrown while requesting HEAD https://huggingface.co/Qwen/Qwen3-8B/resolve/main/config.json
(APIServer pid=7) Retrying in 1s [Retry 1/5]."""


def test_a_traceback_cut_after_the_hubs_retries_is_the_hub() -> None:
    log = _HUB_RETRY_LINES + """
(APIServer pid=7) Traceback (most recent call last):
(APIServer pid=7)   File "/usr/local/lib/python3.12/dist-packages/transformers/configuration_utils.py", line 721, in _get_config_dict
(APIServer pid=7)     resolved_config_file = cached_file("""
    result = diagnose(log)
    assert result.category == "hub_access", result
    assert "thrown while requesting HEAD" in result.evidence[0].text


def test_a_retry_the_hub_then_answered_is_no_crash() -> None:
    log = _HUB_RETRY_LINES + """
(APIServer pid=7) INFO 03-02 10:02:11 [api_server.py:1880] Starting vLLM API server 0 on http://0.0.0.0:8000
(APIServer pid=7) INFO:     Application startup complete."""
    assert diagnose(log).category == "none"
