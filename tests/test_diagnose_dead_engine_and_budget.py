"""An engine that died under a running server, a memory profile that left no KV cache, Ascend's HCCL by error code,
Hopper-only kernels on another GPU, HIP's runtime compiler without a GPU.

Each log is written fresh from the real wording of the code that prints it, not copied from a corpus log:
- vLLM's EngineDeadError (vllm/v1/engine/exceptions.py: "EngineCore encountered an issue. See stack trace (above) for
  the root cause.") raised in a request handler (entrypoints/openai/serving_chat.py) while requests in flight are
  still answered "200 OK"; SGLang's scheduler giving up ("Scheduler terminated after {n} consecutive errors. Last
  error: {e}", srt/managers/scheduler.py);
- vLLM V0's worker.py memory profile ("model weights take ...; the rest of the memory reserved for KV Cache is
  %.2fGiB."), V0's engine ("# GPU blocks: %d, # CPU blocks: %d"), V1's kv_cache_utils.py ("GPU KV cache size: %s
  tokens");
- CANN's HCCL error codes with the error's name in front ("Get_Socket_Timeout(EI0006): Getting socket times out.")
  and the operator layer's report ("Nnopbase fails to invoke the HcclAllocComResourceByTiling function of the hccl
  module");
- CuTe's TMA descriptor check ("Failed to initialize the TMA descriptor " + the CUresult, 801 =
  CUDA_ERROR_NOT_SUPPORTED) and a CUDA error raised in FlashAttention 3's hopper/ sources;
- Python logging's "%(asctime)s - %(name)s - %(levelname)s - %(message)s" relaying the engine's lines, KServe's
  "<time> <pid> <logger> <LEVEL> [<file>:<function>():<line>]", and a TLS
  connection reset during start (urllib3's "ProtocolError: ('Connection aborted.', ConnectionResetError(104,
  'Connection reset by peer'))"; CPython's ssl "[SSL: CERTIFICATE_VERIFY_FAILED]");
- Kunlun's XCCL ("[XCCL][init.cpp:<n>] ... check failed") and CANN's missing operator kernels ("Get path and read
  binary_info_config.json failed, please check if the opp_kernel package is installed!");
- SGLang's /health when the scheduler stopped answering ("Health check failed. Server couldn't get a response from
  detokenizer for last N seconds.", srt/entrypoints/http_server.py);
- ROCm's "Memory access fault by GPU node-N ... Reason: ..." under vLLM's per-size capture line ("Capturing a
  cudagraph on (FULL,BatchDescriptor(...))", compilation/cuda_graph.py);
- hiprtc's build log (ROCm clr hiprtcInternal.cpp: "hip runtime failed to load.", "Error: Please provide architecture
  for which code is to be generated.").
"""

from __future__ import annotations

import pytest

from bot.diagnose import diagnose

_SERVING = "(APIServer pid=88) ERROR 12-03 06:01:{:02d} [serving_chat.py:1012] "
_ACCESS = '(APIServer pid=88) INFO:     10.0.0.5:{} - "POST /v1/chat/completions HTTP/1.1" 200 OK'


def _vllm_died_while_serving() -> str:
    head = [
        "(APIServer pid=88) INFO 12-03 06:00:01 [api_server.py:1971] Starting vLLM API server 0 on http://0.0.0.0:8000",
        "(APIServer pid=88) INFO:     Application startup complete.",
        _ACCESS.format(50112),
        _ACCESS.format(50118),
    ]
    trace = [
        "Error in chat completion stream generator.",
        "Traceback (most recent call last):",
        '  File "/opt/vllm/vllm/entrypoints/openai/serving_chat.py", line 544, in chat_completion_stream_generator',
        "    async for res in result_generator:",
        '  File "/opt/vllm/vllm/v1/engine/async_llm.py", line 402, in generate',
        "    out = q.get_nowait() or await q.get()",
        '  File "/opt/vllm/vllm/v1/engine/output_processor.py", line 57, in get',
        "    raise output",
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the "
        "root cause.",
    ]
    return "\n".join(head + [_SERVING.format(7) + line for line in trace] + [_ACCESS.format(50131)])


def test_an_engine_dead_under_a_running_server_is_a_crash_even_with_later_200s() -> None:
    result = diagnose(_vllm_died_while_serving())
    assert result.category == "other", result
    assert "died while the server was serving" in result.cause
    assert "EngineDeadError" in result.evidence[0].text
    assert any("restart" in step for step in result.next_steps)
    assert not any("before the weights started loading" in step for step in result.next_steps)


def test_sglang_scheduler_giving_up_after_repeated_errors_is_a_crash() -> None:
    log = "\n".join([
        "[2026-12-03 06:00:05] The server is fired up and ready to roll!",
        '[2026-12-03 06:00:09] INFO:     127.0.0.1:40112 - "POST /generate HTTP/1.1" 200 OK',
        "[2026-12-03 06:02:11 TP0] Scheduler hit an exception: RuntimeError: CUDA error: an illegal memory access",
        "[2026-12-03 06:02:13 TP0] RuntimeError: Scheduler terminated after 3 consecutive errors. Last error: CUDA "
        "error: an illegal memory access was encountered",
        '[2026-12-03 06:02:13] INFO:     127.0.0.1:40190 - "GET /health HTTP/1.1" 200 OK',
    ])
    result = diagnose(log)
    assert result.category != "none", result


def test_v0s_api_server_saying_its_engine_is_dead_after_serving_is_a_crash() -> None:
    log = "\n".join([
        "INFO 12-03 06:50:31 metrics.py:455] Avg prompt throughput: 2082.8 tokens/s, Avg generation throughput: 194.4 "
        "tokens/s, Running: 3 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 4.8%, CPU KV cache usage: "
        "0.0%.",
        'INFO:     172.27.0.4:60994 - "POST /v1/chat/completions HTTP/1.0" 200 OK',
        "CRITICAL 12-03 06:50:34 launcher.py:101] MQLLMEngine is already dead, terminating server process",
    ])
    result = diagnose(log)
    assert result.category == "other", result
    assert "died while the server was serving" in result.cause


def test_one_requests_error_under_a_running_server_stays_healthy() -> None:
    log = "\n".join([
        "(APIServer pid=88) INFO:     Application startup complete.",
        _SERVING.format(3) + "Error in preprocessing prompt inputs",
        _SERVING.format(3) + "ValueError: This model's maximum context length is 8192 tokens. However, you requested "
        "9000 tokens.",
        _ACCESS.format(50140),
    ])
    assert diagnose(log).category == "none"


def test_an_engine_that_died_and_came_back_up_is_healthy() -> None:
    log = "\n".join([
        "[2026-12-03 06:02:13 TP0] RuntimeError: Scheduler terminated after 3 consecutive errors. Last error: boom",
        "[2026-12-03 06:05:40] The server is fired up and ready to roll!",
        '[2026-12-03 06:05:41] INFO:     127.0.0.1:40112 - "POST /generate HTTP/1.1" 200 OK',
    ])
    assert diagnose(log).category == "none"


@pytest.mark.parametrize(("log", "category"), [
    # a memory profile that left no KV cache: V0's worker, V0's engine, V1's kv_cache_utils
    ("INFO 12-03 06:00:00 worker.py:266] Memory profiling takes 3.65 seconds\n"
     "INFO 12-03 06:00:00 worker.py:266] the current vLLM instance can use total_gpu_memory (7.99GiB) x "
     "gpu_memory_utilization (0.90) = 7.19GiB\n"
     "INFO 12-03 06:00:00 worker.py:266] model weights take 7.10GiB; non_torch_memory takes 0.06GiB; PyTorch "
     "activation peak memory takes 1.08GiB; the rest of the memory reserved for KV Cache is -1.05GiB.\n"
     "Traceback (most recent call last):", "kv_cache_insufficient"),
    ("INFO 12-03 06:00:02 llm_engine.py:431] # GPU blocks: 0, # CPU blocks: 2048\n"
     "Traceback (most recent call last):", "kv_cache_insufficient"),
    ("(EngineCore_DP0 pid=301) INFO 12-03 06:00:02 [kv_cache_utils.py:1087] GPU KV cache size: 0 tokens\n"
     "(EngineCore_DP0 pid=301) ERROR 12-03 06:00:02 [core.py:708] EngineCore failed to start.",
     "kv_cache_insufficient"),
    # HCCL's error codes with the error's name in front, and the operator layer's failed HCCL call
    ("[PID: 749] 2026-12-03-06:00:15.787.356 Get_Socket_Timeout(EI0006): Getting socket times out. Reason: 1. The "
     "remote does not initiate a connect request.\n        Solution: 1. Check the rank service processes.",
     "nccl_error"),
    ("        TraceBack (most recent call last):\n        Nnopbase fails to invoke the "
     "HcclAllocComResourceByTiling function of the hccl module. ret = 4, comm = 0xfffcc6ed27a0.", "nccl_error"),
])
def test_a_wording_of_the_round_is_its_category(log: str, category: str) -> None:
    result = diagnose(log)
    assert result.category == category, result


def test_a_real_kv_allocation_is_still_progress_not_a_crash() -> None:
    log = ("INFO 12-03 06:00:02 llm_engine.py:431] # GPU blocks: 2048, # CPU blocks: 2048\n"
           "INFO 12-03 06:00:04 model_runner.py:1400] Capturing cudagraphs for decoding.")
    assert diagnose(log).category == "none"


def test_hopper_only_kernels_on_another_gpu_are_the_gpu_generation() -> None:
    logs = (
        "Error: Failed to initialize the TMA descriptor 801\n"
        "[2026-12-03 06:10:02 TP0] Scheduler hit an exception: RuntimeError: CUDA error: unspecified launch failure",
        "(EngineCore_DP0 pid=912) CUDA error (/__w/xformers/xformers/third_party/flash-attention/hopper/"
        "flash_fwd_launch_template.h:188): invalid argument",
    )
    for log in logs:
        result = diagnose(log)
        assert result.category == "cuda_arch_or_driver", (log, result)
        assert any("Hopper" in step and "attention backend" in step for step in result.next_steps)


def test_a_tma_descriptor_with_a_bad_argument_is_not_called_the_gpu_generation() -> None:
    assert diagnose("Error: Failed to initialize the TMA descriptor 1").category != "cuda_arch_or_driver"


def test_hiprtc_without_the_gpus_isa_is_the_kernel_build() -> None:
    log = ("(EngineCore_DP0 pid=160843) ERROR 12-03 06:12:31 [core.py:1006] hip runtime failed to load.\n"
           "(EngineCore_DP0 pid=160843) ERROR 12-03 06:12:31 [core.py:1006] Error: Please provide architecture for "
           "which code is to be generated.")
    result = diagnose(log)
    assert result.category == "jit_compile_failure", result
    assert any("libamdhip64" in step for step in result.next_steps)


def test_a_wrapper_relaying_lines_in_pythons_dashed_logging_format_is_read_through() -> None:
    from bot.logevents import normalize_line

    relayed = normalize_line("2026-12-03 06:20:13,365 - pipeline - INFO - RuntimeError: CUDA error: out of memory")
    assert relayed.text == "RuntimeError: CUDA error: out of memory"
    assert relayed.level is None  # a relay logs every line at INFO: that says nothing of the line
    own = normalize_line("2026-12-03 06:20:13,365 - pipeline - ERROR - server exited with code 1")
    assert (own.text, own.level) == ("server exited with code 1", "ERROR")


def test_kserves_logging_format_is_read_through_and_its_failed_start_is_a_crash() -> None:
    from bot.logevents import normalize_line

    line = ("2026-12-03 07:28:04.488 1 kserve ERROR [__main__.py:<module>():254] Failed to start model server: "
            "integer division or modulo by zero")
    normalized = normalize_line(line)
    assert (normalized.text, normalized.level) == (
        "Failed to start model server: integer division or modulo by zero", "ERROR")
    assert diagnose(line).category == "other"


def test_a_tls_connection_reset_while_starting_is_the_hub_with_other_as_the_alternative() -> None:
    prefix = "2026-12-03 06:20:13,365 - __main__ - INFO - "
    log = "\n".join(prefix + line for line in [
        '  File "/usr/lib/python3.11/ssl.py", line 1382, in do_handshake',
        "    self._sslobj.do_handshake()",
        "urllib3.exceptions.ProtocolError: ('Connection aborted.', ConnectionResetError(104, 'Connection reset by "
        "peer'))",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "/opt/env/lib/python3.11/site-packages/sglang/srt/managers/scheduler.py", line 1773, in '
        "run_scheduler_process",
    ])
    result = diagnose(log)
    assert result.category == "hub_access", result
    assert "other" in result.alternatives
    certificate = diagnose("requests.exceptions.SSLError: HTTPSConnectionPool(host='huggingface.co', port=443): "
                           "Max retries exceeded (Caused by SSLError(SSLCertVerificationError(1, '[SSL: "
                           "CERTIFICATE_VERIFY_FAILED] certificate verify failed')))")
    assert certificate.category == "hub_access"


def test_a_reset_from_the_servers_own_address_is_not_the_hub() -> None:
    log = ("urllib3.exceptions.ProtocolError: ('Connection aborted.', ConnectionResetError(104, 'Connection reset "
           "by peer')) while requesting http://127.0.0.1:30000/generate")
    assert diagnose(log).category != "hub_access"


def test_an_accelerators_own_collective_library_failing_is_the_collective_library() -> None:
    log = ("[XCCL][util.cpp:346] dev 1 addr_window not properly set\n"
           "[XCCL][init.cpp:1227] host 10.0.0.8 addr_window check failed\n"
           "RuntimeError: Engine core initialization failed. See root cause above.")
    assert diagnose(log).category == "nccl_error"


def test_cann_without_its_operator_kernels_is_a_missing_package() -> None:
    log = ("ERROR 12-03 06:40:17 engine.py:400] call aclnnAddRmsNorm failed, detail:EZ1001: [PID: 77] Get path and "
           "read binary_info_config.json failed, please check if the opp_kernel package is installed!")
    result = diagnose(log)
    assert result.category == "missing_dependency", result
    assert any("opp_kernel" in step for step in result.next_steps)


def test_a_kernel_fault_while_cuda_graphs_are_captured_is_the_capture_with_the_kernel_bug_as_alternative() -> None:
    log = "\n".join([
        "(Worker_TP0 pid=3098) DEBUG 12-03 07:10:34 [compilation/cuda_graph.py:239] Capturing a cudagraph on "
        "(FULL,BatchDescriptor(num_tokens=32, num_reqs=32, uniform=True))",
        "Memory access fault by GPU node-2 (Agent handle: 0x460e3a50) on address 0x7ec4dfe0e000. Reason: Page not "
        "present or supervisor privilege.",
    ])
    result = diagnose(log, engine="vllm")
    assert result.category == "cuda_graph_oom", result
    assert "other" in result.alternatives
    assert any("--enforce-eager" in step for step in result.next_steps)
    assert result.fix is not None and result.fix.overrides.disable_cuda_graph


def test_the_same_fault_after_capture_ended_is_not_called_the_capture() -> None:
    log = "\n".join([
        "[2026-12-03 07:10:30 TP0] Capture cuda graph begin. This can take up to several minutes.",
        "[2026-12-03 07:10:41 TP0] Capture cuda graph end. Time elapsed: 11.02 s.",
        "[2026-12-03 07:10:44 TP0] RuntimeError: CUDA error: an illegal memory access was encountered",
    ])
    assert diagnose(log, engine="sglang").category != "cuda_graph_oom"


def test_sglang_failing_its_health_check_as_the_tail_ends_is_a_hung_server() -> None:
    health_failed = ("Health check failed. Server couldn't get a response from detokenizer for last 20 seconds. "
                     "tic start time: 07:20:54. last_heartbeat time: 07:15:53")
    log = "\n".join([
        "[2026-12-03 07:15:00] The server is fired up and ready to roll!",
        '[2026-12-03 07:15:40] INFO:     10.1.1.4:43954 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
        f"[2026-12-03 07:21:14] {health_failed}",
        '[2026-12-03 07:21:14] INFO:     10.1.1.4:60098 - "GET /health HTTP/1.1" 503 Service Unavailable',
    ])
    result = diagnose(log, engine="sglang")
    assert result.category == "other", result
    assert "health check failed" in result.cause and any("py-spy" in step for step in result.next_steps)
    recovered = log + '\n[2026-12-03 07:22:30] INFO:     10.1.1.4:43990 - "POST /v1/chat/completions HTTP/1.1" 200 OK'
    assert diagnose(recovered, engine="sglang").category == "none"
    # Without a ready line in the tail the line still says the server had come up (health_generate in
    # srt/entrypoints/http_server.py answers a silent 503 while ServerStatus.Starting): a stall, never "still
    # starting", but less sure, since an SGLang before that status probed a first request still compiling kernels.
    alone = diagnose(f"[2026-12-03 07:21:14] {health_failed}", engine="sglang")
    assert alone.category == "other" and alone.confidence <= 0.4 and "compiling" in alone.cause, alone
