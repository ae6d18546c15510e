"""Wordings met in the grown crash corpus (tests/data/crashlogs/grown, dev part), each written fresh from the
engine's or library's own message: the libraries around an engine (Ray, the Hub clients, Python's enum,
transformers' GGUF loader, torch's op namespace), wrappers that relay or re-encode the engine's lines (FastChat,
JSON loggers), and messages a terminal wrapped onto two lines. Sources are cited in bot/diagnose/library_rules.py,
bot/diagnose/ops.py and planners/engines/vllm/crash_rules.py.
"""

from __future__ import annotations

import pytest

from bot.diagnose import diagnose


def test_a_wrapper_relaying_stdout_at_info_does_not_hide_the_exception():
    # FastChat's model worker re-logs its child's stdout as "| INFO | stdout |" (lm-sys/FastChat serve/base_model_worker)
    log = """\
2025-03-02 10:11:12 | INFO | stdout |   File "/opt/sglang/python/sglang/srt/models/registry.py", line 61, in resolve_model_cls
2025-03-02 10:11:12 | INFO | stdout |     raise ValueError(
2025-03-02 10:11:12 | INFO | stdout | ValueError: Unsupported architectures: Olmo3ForCausalLM. Supported list: ['LlamaForCausalLM', 'Qwen2ForCausalLM']
"""
    result = diagnose(log, exit_code=1)
    assert result.category == "unsupported_architecture"
    assert "Olmo3ForCausalLM" in result.cause


def test_relayed_info_lines_of_a_server_that_came_up_stay_healthy():
    log = """\
2025-03-02 10:11:12 | INFO | stdout | Loading safetensors checkpoint shards: 100% Completed | 4/4
2025-03-02 10:11:13 | INFO | stdout | Ignore import error when loading sglang.srt.models.mllama4: No module named 'x'
2025-03-02 10:11:20 | INFO | stdout | INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)
2025-03-02 10:11:30 | INFO | stdout | The server is fired up and ready to roll!
"""
    assert diagnose(log).category == "none"


def test_a_json_log_line_is_read_by_its_message():
    log = ('{"level":"error","ts":"2025-05-01T10:00:00Z","message":"huggingface_hub.errors.HfHubHTTPError: 503 Server '
           'Error: Service Unavailable for url: https://huggingface.co/api/models/Qwen/Qwen3-8B/revision/main"}\n')
    result = diagnose(log, exit_code=1)
    assert result.category == "hub_access"
    assert result.evidence[0].text.startswith('{"level"')  # quoted as the host wrote it
    assert "answered 503" in result.next_steps[0]  # the Hub's outage, not this host's network
    assert not any("no (allowed) route" in step for step in result.next_steps)


@pytest.mark.parametrize("log", [
    """\
ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.
Memory on the node (IP: 10.0.0.5, ID: 3c1e) where the task (actor ID: 9f, name=LLMRayActor.__init__) was running was 243.1GB / 251.5GB (0.966), which exceeds the memory usage threshold of 0.95.
""",
    # only the end of Ray's report: the top memory users and its pointer to the OOM-prevention docs
    """\
2025-06-01 12:00:03,337 ERR cli.py:72 -- Job 'raysubmit_abc' failed
95412   14.05   ray::LLMRayActor
95410   13.86   ray::LLMRayActor
Refer to the documentation on how to address the out of memory issue: https://docs.ray.io/en/latest/ray-core/scheduling/ray-oom-prevention.html. Consider provisioning more memory on this node or reducing task parallelism by requesting more CPUs per task.
""",
])
def test_rays_memory_monitor_killing_the_worker_is_the_host_running_out_of_ram(log):
    result = diagnose(log, exit_code=1)
    assert result.category == "host_oom_killed"
    assert "Ray" in result.cause
    assert result.confidence >= 0.7  # the job's exit 1 after Ray killed its actor does not make it doubtful
    assert "RAY_memory_usage_threshold" in result.next_steps[0]


@pytest.mark.parametrize("line", [
    # huggingface_hub file_download.py
    "OSError: Consistency check failed: file should be of size 3963750880 but has size 1048576 "
    "(model-00002-of-00004.safetensors).",
    # modelscope hub/errors.py
    "modelscope.hub.errors.FileIntegrityError: File /root/.cache/modelscope/hub/Qwen/Qwen3-4B/model.safetensors "
    "integrity check failed, expected sha256 signature is 1a2b, actual is 3c4d, the download may be incomplete",
])
def test_an_incomplete_download_is_a_corrupt_model_file(line):
    result = diagnose(f"INFO 06-01 10:00:00 [weight_utils.py:1] Using model weights format ['*.safetensors']\n"
                      f"ERROR 06-01 10:05:00 [engine.py:1] {line}\n", exit_code=1)
    assert result.category == "model_files_missing_or_corrupt"
    assert "download the model once, from one process" in result.next_steps[0]


def test_a_value_an_enum_setting_does_not_have_is_a_bad_argument():
    result = diagnose("ValueError: 'fastsafetensors_v2' is not a valid LoadFormat\n", exit_code=1)
    assert result.category == "bad_argument"
    assert "fastsafetensors_v2" in result.cause and "LoadFormat" in result.cause
    assert "not a LoadFormat this build knows" in result.next_steps[0]


def test_transformers_gguf_loader_not_knowing_the_architecture_is_the_gguf_format_with_both_alternatives():
    log = """\
  File "/venv/lib/python3.12/site-packages/transformers/modeling_gguf_pytorch_utils.py", line 401, in load_gguf_checkpoint
    raise ValueError(f"GGUF model with architecture {architecture} is not supported yet.")
ValueError: GGUF model with architecture glm4moe is not supported yet.
"""
    result = diagnose(log, exit_code=1)
    assert result.category == "quantization_unsupported"
    assert "glm4moe" in result.cause
    assert {"transformers_too_old", "unsupported_architecture"} <= set(result.alternatives)
    assert any("safetensors" in step for step in result.next_steps)


@pytest.mark.parametrize(("log", "category", "first"), [
    # the op alone, a quantization kernel: the build has none for this platform (vllm-project/vllm#19727 on ROCm)
    ("AttributeError: '_OpNamespace' '_C' object has no attribute 'awq_gemm'\n", "quantization_unsupported",
     "awq_gemm"),
    # the same after the extension warned it did not import: the import is the cause, quoted first
    ("WARNING 05-01 10:00:00 [_custom_ops.py:21] Failed to import from vllm._C with ImportError('/venv/lib/python3"
     ".12/site-packages/vllm/_C.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEi')\n"
     "ERROR 05-01 10:00:09 [core.py:1] AttributeError: '_OpNamespace' '_C' object has no attribute 'awq_gemm'\n",
     "missing_dependency", "Failed to import"),
    # an op that is no quantization kernel, no import warning: an extension of another build
    ("'_OpNamespace' '_C' object has no attribute 'rotary_embedding'\n", "missing_dependency", "rotary_embedding"),
])
def test_an_op_missing_from_the_compiled_extension_is_placed_by_the_rest_of_the_tail(log, category, first):
    result = diagnose(log, exit_code=1)
    assert result.category == category
    assert first in result.evidence[0].text


def test_vllms_kernel_chooser_finding_no_quantized_kernel_for_this_gpu_is_quantization_unsupported():
    log = """\
(Worker_TP0 pid=88) ERROR 11-02 09:00:00 [multiproc_executor.py:750] ValueError: Failed to find a kernel that can implement the ScaledMM linear layer. Reasons:
(Worker_TP0 pid=88) ERROR 11-02 09:00:00 [multiproc_executor.py:750] CutlassScaledMMLinearKernel requires capability 89, current compute capability is 80
"""
    result = diagnose(log, exit_code=1)
    assert result.category == "quantization_unsupported"
    assert "ScaledMM" in result.cause


def test_model_runner_v2_refusing_a_speculative_method_is_the_speculative_setup():
    log = """\
pydantic_core._pydantic_core.ValidationError: 1 validation error for VllmConfig
  Value error, Model Runner V2 does not yet support: suffix speculative decoding [type=value_error, input_value=ArgsKwargs((), {}), input_type=ArgsKwargs]
"""
    assert diagnose(log, exit_code=1).category == "speculative_config_invalid"


def test_nccl_falling_back_from_its_network_plugin_is_not_the_error_its_failing_network_is():
    log = """\
node1:77:77 [0] NCCL INFO NET/Plugin: Plugin load returned 2 : libc.so.6: version `GLIBC_2.34' not found (required by /opt/nccl-plugins/libnccl-net.so) : when loading libnccl-net.so
node1:77:77 [0] NCCL INFO NET/Plugin: Using internal network plugin.
node1:77:77 [0] net.cc:579 NCCL WARN Error: network AWS Libfabric not found.
node1:77:77 [0] NCCL INFO init.cc:321 -> 5
"""
    assert diagnose(log, exit_code=1).category == "nccl_error"


@pytest.mark.parametrize("log", [
    # gcc / nvcc after a fatal error in a header of a flashinfer JIT build
    """\
In file included from /venv/lib/python3.11/site-packages/flashinfer/data/include/flashinfer/vec_dtypes.cuh:21,
                 from /root/.cache/flashinfer/80/generated/single_decode_head_dim_128/single_decode.cu:3:
compilation terminated.
""",
    # Triton on Windows building its launcher with the tcc it ships
    "subprocess.CalledProcessError: Command '['C:\\\\py\\\\Lib\\\\site-packages\\\\triton\\\\runtime\\\\tcc\\\\tcc.exe', "
    "'C:\\\\Temp\\\\main.c', '-O3', '-shared']' returned non-zero exit status 1.\n",
])
def test_a_compiler_that_gave_up_is_a_jit_build_failure(log):
    assert diagnose(log, exit_code=1).category == "jit_compile_failure"


def test_a_config_a_wrapper_could_not_load_is_a_model_path_problem():
    log = ("Failed to start the model: Cannot get pretrained config for model /data/models/Llama-3.1-8B: Can't load "
           "the configuration of '/data/models/Llama-3.1-8B'. Otherwise, make sure '/data/models/Llama-3.1-8B' is the "
           "correct path to a directory containing a config.json file\n")
    assert diagnose(log, exit_code=1).category == "model_files_missing_or_corrupt"


def test_macos_symbol_not_found_before_a_cut_traceback_is_a_broken_compiled_extension():
    log = """\
WARNING 04-01 09:00:00 [_custom_ops.py:21] Failed to import from vllm._C with ImportError("dlopen(/src/vllm/_C.abi3.so, 0x0002): Symbol not found: __ZN3c106detail14torchCheckFailEPKcS2_jS2_")
INFO 04-01 09:00:01 [parallel_state.py:967] rank 0 in world size 1 is assigned as DP rank 0, PP rank 0, TP rank 0
[rank0]: Traceback (most recent call last):
[rank0]:   File "<frozen runpy>", line 198, in _run_module_as_main
"""
    result = diagnose(log, exit_code=1)
    assert result.category == "missing_dependency"
    assert "Symbol not found" in result.evidence[0].text


def test_a_pydantic_message_wrapped_onto_two_lines_is_read_whole():
    log = """\
pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig
  Value error, The checkpoint you are trying to load has model type `qwen4_moe`
  but Transformers does not recognize this architecture. This could be because of an issue with the checkpoint.
"""
    result = diagnose(log, exit_code=1)
    assert result.category == "transformers_too_old"
    assert "qwen4_moe" in result.cause


def test_a_vllm_server_that_went_on_listening_after_a_request_error_is_healthy():
    log = """\
(APIServer pid=1) ERROR 04-18 14:03:59 [serving.py:217] Error in preprocessing prompt inputs
(APIServer pid=1) ERROR 04-18 14:03:59 [serving.py:217] vllm.entrypoints.chat_utils.ChatTemplateResolutionError: As of transformers v4.44, default chat template is no longer allowed, so you must provide a chat template if the tokenizer does not define one.
(APIServer pid=1) INFO 04-18 14:04:00 [api_server.py:265] Starting vLLM API server (embedding mode) on http://0.0.0.0:8000
"""
    assert diagnose(log).category == "none"


def test_engine_args_refusing_a_hyphenated_keyword_names_it():
    log = ("Server error: 500 - [address=0.0.0.0:40000, pid=12] AsyncEngineArgs.__init__() got an unexpected keyword "
           "argument 'reasoning-parser'\n")
    result = diagnose(log, exit_code=1)
    assert result.category == "bad_argument"
    assert "reasoning-parser" in result.cause


def _hard_wrapped(log: str, width: int) -> str:
    out: list[str] = []
    for line in log.split("\n"):
        while len(line) > width:
            out.append(line[:width])
            line = line[width:]
        out.append(line)
    return "\n".join(out)


@pytest.mark.parametrize("width", [80, 120])
def test_a_log_copied_from_a_console_that_hard_wraps_is_read_whole(width):
    # vLLM's KV-cache check (vllm/v1/core/kv_cache_utils.py) and a worker's traceback, as an 80/120-column console
    # copies them: the decisive sentence is cut mid-word
    log = """\
(EngineCore_DP0 pid=2211) ERROR 09-14 08:00:00 [core.py:708] EngineCore failed to start.
(EngineCore_DP0 pid=2211) ERROR 09-14 08:00:00 [core.py:708] Traceback (most recent call last):
(EngineCore_DP0 pid=2211) ERROR 09-14 08:00:00 [core.py:708]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/core/kv_cache_utils.py", line 699, in check_enough_kv_cache_memory
(EngineCore_DP0 pid=2211) ERROR 09-14 08:00:00 [core.py:708]     raise ValueError(
(EngineCore_DP0 pid=2211) ERROR 09-14 08:00:00 [core.py:708] ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is needed, which is larger than the available KV cache memory (9.31 GiB). Based on the available memory, the estimated maximum model length is 76208. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.
"""
    assert diagnose(log, exit_code=1).category == "kv_cache_insufficient"
    result = diagnose(_hard_wrapped(log, width), exit_code=1)
    assert result.category == "kv_cache_insufficient"
    assert "larger than the available KV cache memory" in result.evidence[0].text


def test_lines_that_only_happen_to_share_a_length_are_not_joined():
    # two different 61-character lines (no console width, fewer than three): kept apart, the crash named from each
    first = "INFO 09-14 08:00:00 [loader.py:1] Loading weights took 12.3 s"
    second = "INFO 09-14 08:00:01 [gpu_model_runner.py:1] Model loading ok."
    assert len(first) == len(second) == 61
    log = f"{first}\n{second}\nRuntimeError: NCCL error: unhandled system error\n"
    assert diagnose(log, exit_code=1).category == "nccl_error"


def test_the_launch_command_tells_a_bare_type_error_struck_with_speculative_decoding():
    # a speculative setting left unset reaching a comparison (vllm-project/vllm#55444): nothing in the log says MTP
    log = "TypeError: '>' not supported between instances of 'NoneType' and 'int'\n"
    assert diagnose(log, exit_code=1).category == "other"
    command = ("vllm serve Qwen/Qwen3.6-35B-A3B --tensor-parallel-size 2 "
               "--speculative-config '{\"method\": \"mtp\"}'")
    result = diagnose(log, exit_code=1, command=command)
    assert result.category == "speculative_config_invalid"
    assert result.confidence <= 0.6  # a suspicion from the launch, not a message that names the drafter


def test_the_cli_takes_the_command_and_the_exit_code(tmp_path, capsys):
    from bot.cli import main

    logfile = tmp_path / "engine.log"
    logfile.write_text("TypeError: '>' not supported between instances of 'NoneType' and 'int'\n")
    code = main(["diagnose", str(logfile), "--exit-code", "1", "--json", "--command",
                 "python -m sglang.launch_server --model-path /m --speculative-algorithm NEXTN"])
    out = capsys.readouterr().out
    assert code == 1 and '"speculative_config_invalid"' in out


def test_a_check_of_vllms_speculative_config_is_the_speculative_setup_not_the_arguments():
    log = """\
  File "/usr/local/lib/python3.12/dist-packages/vllm/config/speculative.py", line 512, in _verify_args
    if self.num_speculative_tokens > self.max_num_new_tokens:
TypeError: '>' not supported between instances of 'NoneType' and 'int'
"""
    assert diagnose(log, exit_code=1).category == "speculative_config_invalid"
