"""Wordings the batches of 2026-12-02s..z taught, each written fresh from the engines' and libraries' own messages,
and what the launch command rules out.

Sources: vLLM's LLM / EngineArgs keywords (vllm/engine/arg_utils.py; a release without ``limit_mm_per_prompt``
refuses it as a keyword), vllm/entrypoints/cli/serve.py ("With `vllm serve`, you should provide the model as a
positional argument ..."), vLLM's FlashAttention backend ("Sinks are only supported in FlashAttention 3"), the CUDA
runtime's capture errors (cudaGetErrorString 901: "operation failed due to a previous error during capture"),
cudaErrorInvalidDevice ("invalid
device ordinal"), vLLM's Marlin shape checks (layers/quantization/utils/marlin_utils.py).
"""

from __future__ import annotations

import pytest

from bot.diagnose import diagnose


@pytest.mark.parametrize("keyword", ["limit_mm_per_prompt", "enable_prefix_caching", "max_num_batched_tokens"])
def test_an_engine_keyword_an_older_api_refuses_is_an_argument(keyword: str) -> None:
    result = diagnose(f"TypeError: __init__() got an unexpected keyword argument '{keyword}'")
    assert result.category == "bad_argument"
    assert keyword in result.cause


@pytest.mark.parametrize("keyword", ["layer_idx", "mm_features", "past_key_values"])
def test_a_model_or_library_keyword_is_not_an_engine_argument(keyword: str) -> None:
    assert diagnose(f"TypeError: __init__() got an unexpected keyword argument '{keyword}'").category != \
        "bad_argument"


def test_an_option_given_the_wrong_way_is_an_argument() -> None:
    result = diagnose("ValueError: With `vllm serve`, you should provide the model as a positional argument or in a "
                      "config file instead of via the `--model` option.")
    assert result.category == "bad_argument"
    assert any("--model" in step for step in result.next_steps)


def test_a_feature_only_flashattention_3_has_is_the_gpu_generation() -> None:
    result = diagnose("AssertionError: Sinks are only supported in FlashAttention 3.")
    assert (result.category, result.alternatives) == ("cuda_arch_or_driver", ["bad_argument"])


def test_the_cuda_runtime_s_capture_errors_are_the_capture() -> None:
    for text in ("operation failed due to a previous error during capture",
                 "operation would make the legacy stream depend on a capturing blocking stream"):
        assert diagnose(f"RuntimeError: CUDA error: {text}").category == "cuda_graph_oom", text


def test_an_invalid_device_ordinal_is_the_launch_s_gpus_not_the_driver() -> None:
    result = diagnose("torch.AcceleratorError: CUDA error: invalid device ordinal\n"
                      "GPU device may be out of range, do you have enough GPUs?")
    assert result.category == "bad_argument"
    assert "CUDA_VISIBLE_DEVICES" in result.next_steps[0]
    assert not any("driver" in step for step in result.next_steps)


def test_an_exception_quoted_after_prose_on_its_line_is_read() -> None:
    log = ("1. Qwen3-32B model:  AttributeError: 'Qwen3MoeConfig' object has no attribute 'rope_parameters'\n"
           "2. Llama-3.2-1B-Instruct model:  AttributeError: 'LlamaConfig' object has no attribute 'rope_parameters'")
    result = diagnose(log)
    assert result.category == "transformers_too_old"
    assert "rope_parameters" in result.cause


_MARLIN = ("ValueError: Weight input_size_per_partition = 10944 is not divisible by min_thread_k = 128. Consider "
           "reducing tensor_parallel_size or running with --quantization gptq.")


def test_a_kernel_s_shape_refusal_on_one_gpu_is_the_quantization() -> None:
    result = diagnose(_MARLIN, command="vllm serve org/model-AWQ --quantization awq_marlin --dtype float16")
    assert result.category == "quantization_unsupported"
    assert result.alternatives[0] == "tp_not_divisible"


@pytest.mark.parametrize("command", [None, "vllm serve org/model-AWQ -tp 2",
                                     "python -m sglang.launch_server --model-path m --tp 4"])
def test_the_same_refusal_with_a_split_or_no_command_stays_the_split(command: str | None) -> None:
    assert diagnose(_MARLIN, command=command).category == "tp_not_divisible"


# The engines' own echo of their settings, as they print it at start-up (vLLM's LLMEngine / V1 engine config line,
# SGLang's server_args line), when no command came with the log.
_VLLM_CONFIG = ("INFO 08-02 08:16:01 llm_engine.py:176] Initializing an LLM engine (v0.6.3) with config: "
                "model='/models/m-AWQ', tokenizer='/models/m-AWQ', dtype=torch.float16, max_seq_len=32768, "
                "tensor_parallel_size={tp}, pipeline_parallel_size=1, quantization=awq_marlin, enforce_eager=True")
_SGLANG_CONFIG = ("[2025-06-01 10:00:00] server_args=ServerArgs(model_path='/models/m-GPTQ', quantization='gptq_marlin', "
                  "tp_size={tp}, pp_size=1, mem_fraction_static=0.88)")


@pytest.mark.parametrize("echo", [_VLLM_CONFIG, _SGLANG_CONFIG])
def test_the_engine_s_own_settings_line_says_one_gpu_when_no_command_came(echo: str) -> None:
    result = diagnose(echo.format(tp=1) + "\n" + _MARLIN)
    assert result.category == "quantization_unsupported"
    assert result.alternatives[0] == "tp_not_divisible"
    assert diagnose(echo.format(tp=2) + "\n" + _MARLIN).category == "tp_not_divisible"


def test_a_command_s_split_outranks_the_settings_line() -> None:
    log = _VLLM_CONFIG.format(tp=1) + "\n" + _MARLIN
    assert diagnose(log, command="vllm serve org/model-AWQ -tp 2").category == "tp_not_divisible"


_FI = "/usr/local/lib/python3.12/site-packages/flashinfer"
_HUB = "/usr/local/lib/python3.12/site-packages/huggingface_hub"


def test_a_traceback_cut_inside_flashinfer_s_module_build_is_the_build() -> None:
    # flashinfer/prefill.py get_batch_prefill_module: "gen_batch_prefill_module(backend, *args).build_and_load()"
    log = f"""\
Traceback (most recent call last):
  File "{_FI}/decode.py", line 1031, in plan
    self._cached_module = get_batch_prefill_module(
  File "{_FI}/prefill.py", line 374, in get_batch_prefill_module
    module = gen_batch_prefill_module(backend, *args).build_and_load()"""
    result = diagnose(log)
    assert result.category == "jit_compile_failure"
    assert result.confidence <= 0.6


def test_a_traceback_cut_inside_the_hub_s_download_is_the_hub() -> None:
    log = f"""\
Traceback (most recent call last):
  File "/usr/local/lib/python3.12/site-packages/transformers/utils/hub.py", line 437, in cached_files
    hf_hub_download(
  File "{_HUB}/file_download.py", line 1013, in hf_hub_download
    return _hf_hub_download_to_cache_dir("""
    result = diagnose(log)
    assert result.category == "hub_access"
    assert any("HF_HUB_OFFLINE" in step for step in result.next_steps)


def test_a_traceback_cut_inside_transformers_cached_file_alone_is_not_called_the_hub() -> None:
    # (cached_file fails the same way on a local folder that lacks the file)
    log = """\
Traceback (most recent call last):
  File "/usr/local/lib/python3.12/site-packages/transformers/configuration_utils.py", line 740, in _get_config_dict
    resolved_config_file = cached_file("""
    assert diagnose(log).category != "hub_access"


_VLLM = "/usr/local/lib/python3.12/site-packages/vllm"
_SGL = "/usr/local/lib/python3.12/site-packages/sglang/srt"


@pytest.mark.parametrize("frames,category", [
    # torch/cuda/graphs.py: the graph context's __exit__ ends the capture (capture_end runs only there)
    (f'''  File "{_VLLM}/compilation/backends.py", line 677, in __call__
    with torch.cuda.graph(cudagraph, pool=self.graph_pool):
  File "/usr/local/lib/python3.12/site-packages/torch/cuda/graphs.py", line 186, in __exit__
    self.cuda_graph.capture_end()''', "cuda_graph_oom"),
    # vllm model_executor/models/registry.py: the architecture's look-up
    (f'''  File "{_VLLM}/model_executor/model_loader/utils.py", line 240, in get_model_architecture
    architectures = model_config.architectures
  File "{_VLLM}/model_executor/models/registry.py", line 590, in resolve_model_cls
    return self._raise_for_unsupported(architectures)''', "unsupported_architecture"),
    # vllm model_executor/kernels/linear: the scaled-mm kernel choice of a quantized layer
    (f'''  File "{_VLLM}/model_executor/kernels/linear/__init__.py", line 223, in choose_scaled_mm_linear_kernel
    for kernel in possible_kernels[current_platform._enum]:''', "quantization_unsupported"),
])
def test_a_traceback_cut_where_only_one_cause_runs_names_it(frames: str, category: str) -> None:
    result = diagnose("Traceback (most recent call last):\n" + frames)
    assert result.category == category
    assert result.confidence <= 0.6 and result.alternatives


def test_a_native_crash_inside_the_drafter_is_not_a_speculative_setting() -> None:
    log = f"""\
[2025-05-01 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "{_SGL}/speculative/eagle_worker.py", line 250, in forward_batch_speculative_generation
    self.verify(batch, spec_info)
  File "{_SGL}/speculative/eagle_worker.py", line 520, in verify
    torch.cuda.synchronize()
RuntimeError: CUDA error: an illegal memory access was encountered"""
    assert diagnose(log).category == "other"


def test_a_helper_transformers_moved_is_the_package_version_not_a_too_old_transformers() -> None:
    helper = diagnose("ImportError: cannot import name 'is_valid_list_of_images' from "
                      "'transformers.models.mllama.image_processing_mllama'")
    assert helper.category == "missing_dependency"
    assert "older or newer" in helper.next_steps[0]
    model_class = diagnose("ImportError: cannot import name 'Qwen3VLForConditionalGeneration' from 'transformers'")
    assert model_class.category == "transformers_too_old"


def test_ascend_s_capture_stream_failures_are_the_graph_capture() -> None:
    # CANN's ACL graph capture (capture_model_utils.cc, api_impl.cc) when the driver cannot allocate a capture stream
    log = """\
(Worker_TP3 pid=78100) ERROR 04-20 21:27:00 [multiproc_executor.py:932] RuntimeError: wait for compute device failed
(Worker_TP3 pid=78100) ERROR 04-20 21:27:00 [multiproc_executor.py:932]        New capture stream failed, stream_id=1987, event_id=[-1->70037].[FUNC:GetCaptureStream][FILE:capture_model_utils.cc][LINE:92]
(Worker_TP3 pid=78100) ERROR 04-20 21:27:00 [multiproc_executor.py:932]        Capture wait event failed.[FUNC:StreamWaitEvent][FILE:api_impl.cc][LINE:1563]"""
    assert diagnose(log).category == "cuda_graph_oom"


def test_a_launcher_s_own_cli_refusing_a_positional_argument_is_an_argument() -> None:
    # argparse's format for a positional ("prog: error: argument command: invalid choice: ...", Lib/argparse.py)
    result = diagnose("TRL CLI: error: argument command: invalid choice: 'vllm-serve' (choose from 'chat', 'env', "
                      "'vllm-serve2')")
    assert result.category == "bad_argument"
    assert "vllm-serve" in result.cause


def test_an_attention_backend_the_launch_selected_and_the_model_refuses_is_the_setting() -> None:
    # vllm/platforms/cuda.py get_attn_backend_cls
    result = diagnose("(EngineCore pid=149) ValueError: Selected backend AttentionBackendEnum.FLASHINFER is not valid "
                      "for this configuration. Reason: ['attention sinks not supported']")
    assert (result.category, result.alternatives) == ("bad_argument", ["cuda_arch_or_driver"])
    assert "VLLM_ATTENTION_BACKEND" in result.next_steps[0] and "FLASHINFER" in result.next_steps[0]


def test_an_inspection_failure_of_several_architectures_inside_pydantic_s_wrapping_is_the_architecture() -> None:
    # vLLM's ModelConfig is a pydantic dataclass from 0.10: its ValueError reaches the log as "Value error, ..."
    log = """\
pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig
  Value error, Model architectures ['Qwen3ForCausalLM', 'TransformersForCausalLM'] failed to be inspected. Please \
check the logs for more details. [type=value_error, input_value=ArgsKwargs((), {'model': ...}), input_type=ArgsKwargs]
    For further information visit https://errors.pydantic.dev/2.11/v/value_error"""
    result = diagnose(log)
    assert result.category == "unsupported_architecture"
    assert "Qwen3ForCausalLM" in result.cause


def test_a_kernel_built_for_one_architecture_only_is_the_gpu() -> None:
    result = diagnose("This kernel only supports sm120.\ncudaErrorLaunchFailure: unspecified launch failure")
    assert result.category == "cuda_arch_or_driver"
    assert diagnose("SGLang only supports sm75 and above").category == "cuda_arch_or_driver"


def test_a_bare_cuda_error_name_ends_a_start_as_a_crash() -> None:
    result = diagnose("INFO 05-01 10:00:00 [gpu_model_runner.py:1] Starting to load model /m...\n"
                      "cudaErrorLaunchFailure: unspecified launch failure")
    assert result.category != "none"


def test_an_error_the_tail_ends_on_after_the_server_came_up_is_not_called_no_error() -> None:
    # (ms-swift's rollout server: vLLM is up, then a worker call fails and the paste ends there)
    log = """\
INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)
INFO:     10.0.0.3:42122 - "GET /health/ HTTP/1.1" 200 OK
[ERROR:swift] Method execution failed: collective_rpc
Traceback (most recent call last):
  File "/opt/conda/lib/python3.10/site-packages/vllm/engine/async_llm_engine.py", line 535, in collective_rpc_async
    raise NotImplementedError
NotImplementedError"""
    result = diagnose(log)
    assert result.category == "none" and result.confidence <= 0.5
    assert "no error follows" not in result.cause
    assert "/health" in result.next_steps[0]


def test_a_c10d_store_socket_timing_out_is_the_communication() -> None:
    # torch/csrc/distributed/c10d/socket.cpp, logged at W by every rank that waits
    line = ("[rank5]:[W806 22:23:09.970704950 socket.cpp:487] [c10d] waitForInput: socket SocketImpl(fd=109, "
            "addr=[::ffff:10.0.0.2]:38948, remote=[::ffff:10.0.0.2]:47904) timed out after 1800000ms")
    assert diagnose(line).category == "nccl_error"


def test_an_attention_backend_refusing_the_kv_cache_dtype_is_the_kv_quantization() -> None:
    text = ("ValueError: MLA kv_data_type torch.uint8 is not supported. Supported dtypes: [torch.bfloat16, "
            "torch.float16]")
    plain = diagnose(text)
    assert plain.category == "quantization_unsupported" and plain.fix is None
    planned = diagnose(text, command="vllm serve org/model --kv-cache-dtype fp8")
    assert planned.fix is not None and planned.fix.overrides.remove_args == ["--kv-cache-dtype"]


def test_a_settings_check_names_only_flags_the_engines_have() -> None:
    result = diagnose("ValueError: max_num_seqs must be at most 256 when enable_chunked_prefill is set")
    assert "--max-num-seqs" in result.next_steps[0]
    odd = diagnose("ValueError: block_table_width must be set when max_num_seqs is set")
    assert "--block-table-width" not in odd.next_steps[0] and "--max-num-seqs" in odd.next_steps[0]


_PKG = "/usr/local/lib/python3.10/dist-packages"


def test_an_exception_raised_while_a_package_is_imported_is_that_package() -> None:
    # (an AttributeError from lightop/__init__.py reading its runtime's version, gpustack/gpustack#5305)
    log = f"""\
Traceback (most recent call last):
  File "{_PKG}/vllm/v1/attention/backends/mla/indexer.py", line 18, in <module>
    from lightop import gemmopt
  File "{_PKG}/lightop/__init__.py", line 20, in <module>
    dtk_version = get_dtk_version(ROCM_HOME)
  File "{_PKG}/lightop/__init__.py", line 16, in get_dtk_version
    dtk_version = ''.join(dtk_version.split('.'))
AttributeError: 'NoneType' object has no attribute 'split'"""
    assert diagnose(log).category == "missing_dependency"


def test_a_module_run_with_python_m_is_not_an_import() -> None:
    log = f"""\
Traceback (most recent call last):
  File "/usr/lib/python3.10/runpy.py", line 86, in _run_code
    exec(code, run_globals)
  File "{_PKG}/vllm/entrypoints/openai/api_server.py", line 900, in <module>
    uvloop.run(run_server(args))
  File "{_PKG}/uvloop/__init__.py", line 82, in run
    return loop.run_until_complete(wrapper())
AttributeError: 'NoneType' object has no attribute 'split'"""
    assert diagnose(log).category != "missing_dependency"


def test_a_runner_that_allocates_one_kv_cache_type_refuses_a_hybrid_model_as_the_architecture() -> None:
    # vLLM's own hardware runners raise it in initialize_kv_cache (vllm/v1/worker/tpu_model_runner.py); written fresh.
    log = ('  File "/opt/venv/lib/python3.12/site-packages/vllm/v1/worker/tpu_model_runner.py", line 1804, in '
           "initialize_kv_cache\n"
           "    raise NotImplementedError(\n"
           "NotImplementedError: Hybrid models with more than one KV cache type are not supported yet.")
    result = diagnose(log, exit_code=1, engine="vllm")
    assert result.category == "unsupported_architecture"
    assert "other" in result.alternatives
    steps = " ".join(result.next_steps)
    assert "more than one kind of KV cache" in steps and "upgrade" not in steps
