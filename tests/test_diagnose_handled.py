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


# ------------------------------------------------------------------------------------------ requests a server answered
_SERVING = """\
INFO 05-08 21:20:00 [api_server.py:1090] Starting vLLM API server 0 on http://0.0.0.0:8000
INFO:     127.0.0.1:40000 - "POST /v1/chat/completions HTTP/1.1" 200 OK"""


@pytest.mark.parametrize("rejected", [
    # vllm/entrypoints/openai/serving_engine.py _validate_input, logged by serving_chat.py
    "ERROR 05-08 21:27:27 [serving_chat.py:198] Error in preprocessing prompt inputs\n"
    "ERROR 05-08 21:27:27 [serving_chat.py:198] ValueError: This model's maximum context length is 4096 tokens. "
    "However, you requested 5000 tokens (4500 in the messages, 500 in the completion).",
    # vllm/multimodal: the per-prompt limit, as vLLM 0.6/0.7 (no brackets) logs it
    "ERROR 01-23 07:08:25 serving_chat.py:181] ValueError: At most 2 image(s) may be provided in one request.",
    # vllm/entrypoints/openai/tool_parsers/hermes_tool_parser.py: logger.exception, traceback without the prefix
    "ERROR 05-10 10:00:00 [hermes_tool_parser.py:110] Error in extracting tool call from response.\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/tool_parsers/hermes_tool_parser.py", '
    'line 88, in extract_tool_calls\n'
    "    json.loads(match[0] if match[0] else match[1])\n"
    "json.decoder.JSONDecodeError: Expecting value: line 1 column 2 (char 1)",
])
@pytest.mark.parametrize("with_ready", [True, False])
def test_a_request_the_server_refused_is_not_a_crash(rejected: str, with_ready: bool) -> None:
    # Without the ready line in the excerpt the handler's own line proves the server was serving.
    log = f"{_SERVING}\n{rejected}" if with_ready else rejected
    result = diagnose(log)
    assert result.category == "none", result.cause
    assert "still starting" not in result.cause


def test_a_request_error_that_says_the_engine_died_is_a_crash() -> None:
    log = (f"{_SERVING}\nERROR 05-08 21:27:27 [serving_chat.py:1100] Error in chat completion stream generator.\n"
           "Traceback (most recent call last):\n"
           '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/async_llm.py", line 400, in generate\n'
           "    out = q.get_nowait() or await q.get()\n"
           "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for "
           "the root cause.")
    assert diagnose(log, exit_code=1).category != "none"


@pytest.mark.parametrize("log,category", [
    # sglang/srt/managers/scheduler.py watchdog
    ("[2025-08-02 19:24:30 TP0] Watchdog timeout (self.watchdog_timeout=300)", "other"),
    # sglang's scheduler: one request no longer fits the KV pool
    ("AssertionError: No space left for only one request, self.token_to_kv_pool_allocator.available_size()=0",
     "kv_cache_insufficient"),
    # ROCm's HSA runtime on a kernel's fault (ROCR-Runtime)
    ("Memory access fault by GPU node-2 (Agent handle: 0x55d1f0c0) on address 0x7f0000000000. Reason: Page not "
     "present or supplementary page not present.", "other"),
    # HCCL's own log line (Ascend's collective library)
    ("[ERROR] HCCL(1234,python3):2026-01-01-00:00:00.000.000 [hccl_socket_manager.cc:778] [5678][Wait][LinkEstablish]"
     "wait socket establish timeout, role[0] rank[3] timeout[120]", "nccl_error"),
    # Ascend's graph capture out of stream resources (CANN)
    ("rtStreamBeginCapture execution failed, reason=driver error:no stream resource", "cuda_graph_oom"),
    # Ascend's runtime that cannot start (torch_npu's first ACL call)
    ("RuntimeError: SetPrecisionMode:torch_npu/csrc/framework/LazyInitAclops.cpp:155 NPU function error: "
     "at_npu::native::AclSetCompileopt(aclCompileOpt::ACL_PRECISION_MODE, precision_mode), error code is 500001",
     "cuda_arch_or_driver"),
    # a package at another version than the engine expects
    ("AttributeError: module 'flashinfer' has no attribute 'mm_fp4'", "missing_dependency"),
])
def test_serving_time_and_platform_wordings(log: str, category: str) -> None:
    result = diagnose(log, exit_code=1)
    assert result.category == category, result.cause


def test_no_platform_yet_before_a_plugin_activates_is_routine() -> None:
    # vLLM 0.7 logs "No platform detected" before the platform plugin (vllm-ascend) activates.
    log = ("INFO 03-05 17:41:34 __init__.py:187] No platform detected, vLLM is running on UnspecifiedPlatform\n"
           "INFO 03-05 17:41:34 __init__.py:174] Platform plugin ascend is activated\n"
           "INFO 03-05 17:41:38 api_server.py:838] vLLM API server version 0.7.1")
    assert diagnose(log).category == "none"
    assert diagnose("INFO 03-05 17:41:34 __init__.py:187] No platform detected, vLLM is running on "
                    "UnspecifiedPlatform\nRuntimeError: Failed to infer device type", exit_code=1).category \
        == "cuda_arch_or_driver"


@pytest.mark.parametrize("fragment,category", [
    # Engines' own sentences as a short paste keeps them: without the exception class, or cut at a console's width.
    ("error while attempting to bind on address ('0.0.0.0', 30001)", "port_in_use"),
    ("argument --attention-backend: invalid choice: 'fa9' (choose from 'flashinfer', 'triton')", "bad_argument"),
    ("unrecognized arguments: --enable-turbo", "bad_argument"),
    ("LayerNorm failed with error code no kernel image is available", "cuda_arch_or_driver"),
    ("socketPollConnect: Connect to 10.1.2.3<40123> returned 113(No route to host)", "nccl_error"),
    ("40.0 GiB KV cache is needed, which is larger than the available KV", "kv_cache_insufficient"),
    ("The model's max seq len (65536) is larger than the maximum number", "kv_cache_insufficient"),
    ("Failed to load model - not enough GPU memory. Try lowering --gpu-memory-utilization to free memory for weights",
     "gpu_oom_weights"),
    ("Repo model meta-llama/Llama-3.2-1B is gated. You must be authenticated to access it.", "hub_access"),
    ("_C.abi3.so: undefined symbol", "missing_dependency"),
    ("RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must use "
     "the 'spawn' start method", "other"),
    ("does not match the quantization method specified in the `quantization` argument (awq_marlin)", "bad_argument"),
])
def test_a_short_paste_of_an_engines_sentence_is_still_read(fragment: str, category: str) -> None:
    result = diagnose(fragment)
    assert result.category == category, result.cause
    assert "?" not in result.cause and "()" not in result.cause and "  " not in result.cause


@pytest.mark.parametrize("log,category", [
    # vllm/lora: an adapter larger than the launch allows, raised directly or through the engine's RPC wrapper
    ("ValueError: LoRA rank 128 is greater than max_lora_rank 64.", "bad_argument"),
    ("Exception: Call to add_lora method failed: LoRA rank 32 is greater than max_lora_rank 16.", "bad_argument"),
    # a mode that needs a flag given with it (sgl-router, SGLang's server_args checks)
    ("Error starting router: PD disaggregation mode requires --decode", "bad_argument"),
    # the RDMA registration of PD disaggregation's KV buffers (SGLang's Mooncake backend)
    ("RuntimeError: Mooncake memory registration failed.", "nccl_error"),
])
def test_component_wordings(log: str, category: str) -> None:
    result = diagnose(log, exit_code=1)
    assert result.category == category, result.cause


def test_a_feature_refusal_raised_in_the_cache_code_is_not_the_cache_running_out() -> None:
    sgl = "/sgl-workspace/sglang/python/sglang/srt"
    log = f"""\
Traceback (most recent call last):
  File "{sgl}/managers/scheduler.py", line 300, in __init__
    self.init_memory_pool_and_cache()
  File "{sgl}/mem_cache/hiradix_cache.py", line 80, in __init__
    raise ValueError("HiRadixCache only supports MHA and MLA models")
ValueError: HiRadixCache only supports MHA and MLA models"""
    assert diagnose(log, exit_code=1).category != "kv_cache_insufficient"


@pytest.mark.parametrize("log,category", [
    # Triton's own minimum GPU (torch/_inductor, triton): older than what the compiler targets
    ("RuntimeError: Found Tesla M40 which is too old to be supported by the triton GPU compiler, which is used as the "
     "backend. Triton only supports devices of CUDA Capability >= 7.0, but your device is of CUDA capability 5.2",
     "cuda_arch_or_driver"),
    # a flag forbidden in this role (vllm/v1/engine/utils.py's data-parallel handshake)
    ("RuntimeError: Remote engine 3 must not use --headless", "bad_argument"),
    # NCCL refusing two ranks on one GPU (nccl src/init.cc)
    ("host:1:1 [0] init.cc:943 NCCL WARN Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 1000",
     "nccl_error"),
    # a LoRA adapter that is not at its path (vllm/lora/worker_manager.py)
    ("ValueError: Loading lora my_adapter failed: No adapter found for /srv/adapters/my_adapter",
     "model_files_missing_or_corrupt"),
    # a KV connector the engine path does not know
    ("ERROR 05-13 08:41:45 [engine.py:598] Unsupported connector type: SomeConnectorV9", "bad_argument"),
    # a model class without pipeline parallelism (vllm/config)
    ("NotImplementedError: Pipeline parallelism is not supported for this model. Supported models implement the "
     "`SupportsPP` interface.", "bad_argument"),
])
def test_more_component_wordings(log: str, category: str) -> None:
    result = diagnose(log, exit_code=1)
    assert result.category == category, result.cause


def test_a_flash_attention_version_assert_is_the_gpu_generation() -> None:
    # vllm/v1/attention/backends/flash_attn.py: "assert is_fa_version_supported(self.fa_version)" on a T4 / V100.
    log = f"""\
ERROR 02-11 20:39:41 [core.py:208]   File "{_VLLM}/v1/attention/backends/flash_attn.py", line 200, in __init__
ERROR 02-11 20:39:41 [core.py:208]     assert is_fa_version_supported(self.fa_version)
ERROR 02-11 20:39:41 [core.py:208] AssertionError
CRITICAL 02-11 20:39:41 [core_client.py:269] Got fatal signal from worker processes, shutting down.
Killed"""
    result = diagnose(log)
    assert result.category == "cuda_arch_or_driver", result.cause
    assert "compute capability 8.0" in result.next_steps[0]


def test_the_shells_killed_after_the_engine_shut_itself_down_is_not_the_cause() -> None:
    log = """\
ERROR 05-19 22:17:53 [core.py:386] RuntimeError: ('Worker failed with error %s, please check the stack trace above \
for the root cause', "'list' object has no attribute 'shape'")
CRITICAL 05-19 22:17:53 [core_client.py:359] Got fatal signal from worker processes, shutting down. See stack trace \
above for root cause issue.
Killed"""
    result = diagnose(log)
    assert result.category == "other" and "host_oom_killed" in result.alternatives, result.cause
    # A bare "Killed" with nothing before it is still the OOM killer's most likely work.
    assert diagnose("INFO 05-19 22:17:00 [gpu_model_runner.py:1000] Starting to load model /m...\nKilled").category \
        == "host_oom_killed"


def test_a_worker_that_died_right_after_its_own_native_failure_was_not_killed_from_outside() -> None:
    log = """\
Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:164 'invalid argument'
(EngineCore pid=36) ERROR 09-10 09:37:41 [multiproc_executor.py:314] Worker proc VllmWorker-0 died unexpectedly \
(exit code: None), shutting down executor."""
    result = diagnose(log)
    assert result.category != "host_oom_killed", result.cause
    assert "Cuda error" in result.evidence[0].text
    # The native failure is vLLM's custom all-reduce's own check (csrc/custom_all_reduce.cuh CUDACHECK): its IPC
    # buffers between the GPUs, fixed by --disable-custom-all-reduce (vllm-project/vllm#56180).
    assert result.category == "nccl_error"
    assert result.fix is not None and "--disable-custom-all-reduce" in result.fix.overrides.extra_args


def test_a_model_module_the_engine_itself_lacks_is_an_engine_too_old_for_the_model() -> None:
    result = diagnose("ModuleNotFoundError: No module named 'sglang.srt.models.kimi_k3'", exit_code=1)
    assert result.category == "unsupported_architecture", result.cause
    # any other module is a package to install
    assert diagnose("ModuleNotFoundError: No module named 'mooncake'", exit_code=1).category == "missing_dependency"


@pytest.mark.parametrize("log,category", [
    # CuTe DSL's check of its target architecture (cutlass.cute.nvgpu)
    ("cutlass.cute.nvgpu.common.OpError: OpError: expects arch to be one of ['sm_100a'], but got Arch.sm_103a",
     "cuda_arch_or_driver"),
    # DeepGEMM's JIT runtime when its compiler failed (csrc/jit/kernel_runtime.hpp)
    ("RuntimeError: Assertion error (csrc/apis/../jit/kernel_runtime.hpp:45): exit_code == 0", "jit_compile_failure"),
    # SGLang's mamba state pools
    ("AssertionError: Not enough space for mamba ping pong idx, try to increase --mamba-full-memory-ratio.",
     "kv_cache_insufficient"),
])
def test_newest_release_wordings(log: str, category: str) -> None:
    result = diagnose(log, exit_code=1)
    assert result.category == category, result.cause


@pytest.mark.parametrize("log,words", [
    ("host:1:1 [0] init.cc:943 NCCL WARN Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 1000",
     "its own device"),
    ("[ERROR] HCCL(1234,python3):2026-01-01-00:00:00.000.000 [hccl_socket_manager.cc:778] wait socket establish "
     "timeout", "HCCL_SOCKET_IFNAME"),
    ("RuntimeError: Mooncake memory registration failed.", "ulimit -l unlimited"),
    ("ValueError: Loading lora a failed: No adapter found for /srv/adapters/a", "adapter_config.json"),
    ("RuntimeError: SetPrecisionMode:torch_npu/csrc/framework/LazyInitAclops.cpp:155 NPU function error: "
     "at_npu::native::AclSetCompileopt(aclCompileOpt::ACL_PRECISION_MODE, precision_mode), error code is 500001",
     "npu-smi info"),
])
def test_each_new_family_gets_its_own_next_step(log: str, words: str) -> None:
    result = diagnose(log, exit_code=1)
    assert words in result.next_steps[0], result.next_steps
    assert "NVIDIA driver" not in result.next_steps[0] and "NCCL_DEBUG" not in result.next_steps[0]
