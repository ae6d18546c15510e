"""The engines' refusals in general words (bot/diagnose/vocabulary_rules.py), each a message of the engines' source
(sglang 0.5.9 server_args.py and layers/quantization/, vllm 0.11.0 config/ and model_loader/), with the advice
quoting the check's own words; and the lines that only look like a check and must stay unrecognised."""

from __future__ import annotations

import pytest

from bot.diagnose import diagnose


def test_a_settings_check_is_a_bad_argument_and_names_the_flags_to_change():
    result = diagnose("AssertionError: chunked_prefill_size must be divisible by page_size\n", exit_code=1)
    assert result.category == "bad_argument"
    assert '"chunked_prefill_size must be divisible by page_size"' in result.next_steps[0]
    assert "--chunked-prefill-size" in result.next_steps[0] and "--page-size" in result.next_steps[0]


def test_a_quantization_check_is_quantization_unsupported_and_quotes_what_it_accepts():
    result = diagnose("ValueError: QoQ does not support weight_bits = 3. Only weight_bits = 4 are supported.\n",
                      exit_code=1)
    assert result.category == "quantization_unsupported"
    assert "Only weight_bits = 4 are supported" in result.next_steps[0]
    assert "bad_argument" in result.alternatives


@pytest.mark.parametrize(("line", "package"), [
    ("ValueError: FlashInfer mamba module not available, please check flashinfer installation.", "flashinfer"),
    ("NotImplementedError: Qwen3ForCausalLM requires AITER to be installed for non-emulation mode!", "AITER"),
])
def test_a_package_the_engine_checks_for_is_a_missing_dependency(line, package):
    result = diagnose(line + "\n", exit_code=1)
    assert result.category == "missing_dependency"
    assert package.lower() in result.cause.lower()


@pytest.mark.parametrize("line", [
    "RuntimeError: Cannot find any safetensors model weights with `/models/Qwen3-8B`",
    "RuntimeError: The file size different is more than 1%: - /models/Qwen3-8B/model-00001-of-00004.safetensors",
])
def test_the_loaders_file_checks_are_the_model_files(line):
    assert diagnose(line + "\n", exit_code=1).category == "model_files_missing_or_corrupt"


def test_an_argument_check_that_names_the_drafter_is_the_speculative_setup():
    log = """\
  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/server_args.py", line 2210, in _handle_speculative_decoding
    raise ValueError(
ValueError: Spec v2 currently only supports topk = 1 for speculative decoding.
"""
    assert diagnose(log, exit_code=1).category == "speculative_config_invalid"


@pytest.mark.parametrize("line", [
    # an internal API that changed between a plugin and the engine (vllm-project/vllm#21452): no setting of the user's
    "TypeError: FlashAttentionImpl.__init__() got an unexpected keyword argument 'layer_idx'",
    # a LoRA adapter's modules, refused at the first request
    "ValueError: While loading /out/checkpoint-100, expected target modules in ['down_proj', 'o_proj'] but received "
    "['mlp1.1', 'mlp1.3']",
])
def test_lines_that_only_look_like_a_settings_check_stay_unrecognised(line):
    assert diagnose(line + "\n", exit_code=1).category == "other"


def test_docker_refusing_to_publish_a_taken_port_is_port_in_use():
    # moby's port allocator, when `docker run -p 30000:30000` meets a port another container or process holds
    log = ("docker: Error response from daemon: driver failed programming external connectivity on endpoint sglang "
           "(3f2a9c): Bind for 0.0.0.0:30000 failed: port is already allocated.\n")
    result = diagnose(log, exit_code=125)
    assert result.category == "port_in_use"


@pytest.mark.parametrize(("line", "category"), [
    # CUDA's error for a driver older than the toolkit that wrote the PTX (cudaErrorUnsupportedPtxVersion)
    ("torch.AcceleratorError: CUDA error: unsupported PTX version", "cuda_arch_or_driver"),
    # a model class refused by name (an engine that has not added it yet)
    ("NotImplementedError: Qwen3NextForCausalLM is not supported by sglang yet", "unsupported_architecture"),
    # ... but a feature refused for it is the launch's combination of settings (--enable-lora), not the architecture
    ("NotImplementedError: LlamaForCausalLM is not supported with LoRA", "bad_argument"),
    # the settings checks' own words, with or without a setting's name (sglang 0.5.9 / vllm 0.11.0 sources)
    ("ValueError: use_cudagraph and cudagraph_mode are mutually exclusive, prefer cudagraph_mode.", "bad_argument"),
    ("ValueError: Unrecognized distributed executor backend flashinfer. Supported values are 'ray', 'mp'.",
     "bad_argument"),
    # quantization methods named inside a class name, and "only ... are supported"
    ("ValueError: AWQMoEMethod only supports 4bit now.", "quantization_unsupported"),
    ("ValueError: For FP8 Fused MoE layers, only per-tensor and per-channel scales for weights and activations are "
     "supported. Found group, group", "quantization_unsupported"),
    # the taxonomy's "experts not divisible", by the expert-parallel size
    ("ValueError: The number of experts (60) is not divisible by the expert parallel size (8)", "tp_not_divisible"),
])
def test_more_wordings_of_known_causes(line, category):
    assert diagnose(line + "\n", exit_code=1).category == category


def test_a_vllm_worker_that_died_without_an_error_is_a_crash_never_still_starting():
    # vllm/v1/executor/multiproc_executor.py notices the worker is gone; nothing else is printed
    log = """\
INFO 05-01 10:00:00 [gpu_model_runner.py:1] Starting to load model /models/Qwen3-32B...
WARNING 05-01 10:00:30 [multiproc_executor.py:1] Worker proc VllmWorker-1 died unexpectedly, shutting down executor.
"""
    result = diagnose(log)
    assert result.category != "none"
    assert "died unexpectedly" in result.evidence[0].text


@pytest.mark.parametrize(("exit_line", "category"), [
    ("", "other"),  # the consequence only: the scheduler's own error is elsewhere
    ("[2025-05-01 10:00:00] Exit code: -9\n", "host_oom_killed"),  # and it was SIGKILLed
])
def test_sglang_saying_its_scheduler_is_dead_is_a_crash(exit_line, category):
    # sglang/srt/entrypoints/engine.py _wait_for_scheduler_ready: logged without a level in SGLang's format
    log = "[2025-05-01 10:00:00] Rank 0 scheduler is dead. Please check if there are relevant logs.\n" + exit_line
    assert diagnose(log).category == category


@pytest.mark.parametrize("line", [
    # a setting named in prose by the words of its option (--enable-dp-attention, --chunked-prefill-size,
    # --cpu-offload-gb, --attention-backend): sglang 0.5.9 server_args.py, vllm 0.11.0 config/lora.py
    "AssertionError: Please enable dp attention when setting enable_dp_lm_head.",
    "AssertionError: PD-Multiplexing is not compatible with chunked prefill.",
    "ValueError: V0 LoRA does not support CPU offload, please use V1.",
    "AssertionError: One of the attention backends in flashinfer is required for Qwen3ForCausalLM, but got triton",
])
def test_a_setting_named_in_the_words_of_its_option_is_a_bad_argument(line):
    result = diagnose(line + "\n", exit_code=1)
    assert result.category == "bad_argument"
    assert result.evidence[0].text == line


@pytest.mark.parametrize(("text", "category"), [
    # the same words logged as a warning of a server that goes on starting: not a crash
    ("WARNING 05-01 10:00:00 [config.py:1] chunked prefill is not supported with this model, disabling it.\n",
     "none"),
    # a split by the parallel size is the tensor-parallel category's, even in the option's words
    ("ValueError: The number of heads must be divisible by tensor parallel size.\n", "tp_not_divisible"),
])
def test_setting_words_leave_other_categories_and_warnings_alone(text, category):
    assert diagnose(text, exit_code=1 if category != "none" else None).category == category


@pytest.mark.parametrize(("line", "category"), [
    # the drafter named after the refusal (vllm 0.11.0 config/vllm.py; sglang 0.5.9 server_args.py)
    ("NotImplementedError: Fast prefill optimization for KV sharing is not compatible with EAGLE as EAGLE requires "
     "correct logits for all tokens", "speculative_config_invalid"),
    ("ValueError: Spec v2 currently only supports topk = 1 for speculative decoding.", "speculative_config_invalid"),
    # a model dimension over any tensor-parallel size or the world size (sglang 0.5.9 model_runner.py, models/)
    ("AssertionError: num_attention_heads must be divisible by world_size", "tp_not_divisible"),
    # an architecture refused in the words of a port or of a removal (sglang models/mindspore.py, vllm registry)
    ("ValueError: Unsupported arch ['Qwen3NextForCausalLM']", "unsupported_architecture"),
    ("ValueError: Model architecture Qwen3ForCausalLM was supported in vLLM until v0.10.2, and is not supported "
     "anymore. Please use an older version of vLLM if you want to use this model architecture.",
     "unsupported_architecture"),
    # a backend for one GPU generation (sglang 0.5.9 server_args.py)
    ("ValueError: TRTLLM MLA backend is only supported on Blackwell GPUs (SM100/SM12x). Please use a different "
     "backend.", "cuda_arch_or_driver"),
    # too little room for a cache the engine sizes after the weights (sglang mem_cache/memory_pool.py)
    ("AssertionError: Not enough space for mamba cache, try to increase --mamba-full-memory-ratio or "
     "--max-mamba-cache-size.", "kv_cache_insufficient"),
    # the distributed group's barrier (vllm distributed/utils.py)
    ("RuntimeError: Barrier departure timed out after 300.0 s", "nccl_error"),
])
def test_the_engines_other_wordings_of_known_causes(line, category):
    assert diagnose(line + "\n", exit_code=1).category == category


def test_a_setting_named_in_prose_is_advised_with_its_flags():
    result = diagnose("AssertionError: PD-Multiplexing is not compatible with chunked prefill.\n", exit_code=1)
    assert '"PD-Multiplexing is not compatible with chunked prefill."' in result.next_steps[0]
    assert "--chunked-prefill-size" in result.next_steps[0]


def test_the_engines_own_remedy_is_quoted_when_the_advice_does_not_name_it():
    result = diagnose("AssertionError: Not enough space for mamba cache, try to increase --mamba-full-memory-ratio or "
                      "--max-mamba-cache-size.\n", exit_code=1)
    assert any("try to increase --mamba-full-memory-ratio" in step for step in result.next_steps)


def test_a_backend_for_another_gpu_generation_is_advised_as_such():
    result = diagnose("ValueError: TRTLLM MLA backend is only supported on Blackwell GPUs (SM100/SM12x). Please use "
                      "a different backend.\n", exit_code=1)
    assert "choose a backend or kernel this GPU runs" in result.next_steps[0]
    assert "FP8" not in result.next_steps[0]


@pytest.mark.parametrize("line", [
    # torch's c10d TCPStore when the rendezvous port is held (torch/csrc/distributed/c10d/socket.cpp)
    "RuntimeError: The server socket has failed to listen on any local network address. port: 29500, useIpv6: 0",
    "OSError: Failed to bind to 0.0.0.0:30000",
])
def test_a_bind_that_failed_is_a_taken_port(line):
    assert diagnose(line + "\n", exit_code=1).category == "port_in_use"


@pytest.mark.parametrize(("text", "category"), [
    # sglang 0.5.9 jit_kernel/flash_attention/cute/interface.py, raised from a JIT kernel's module: the GPU's
    # capability, not the build
    ('  File "/usr/local/lib/python3.12/dist-packages/sglang/jit_kernel/flash_attention/cute/interface.py", line 479, '
     'in _check\n    raise ValueError(\nValueError: Unsupported compute capability: 86. Supported: 9.x, 10.x, 11.x\n',
     "cuda_arch_or_driver"),
    # a quantization method's kernels for one generation (sglang 0.5.9 layers/quantization/)
    ("RuntimeError: MXFP8 MoE quantization requires SM100.\n", "quantization_unsupported"),
])
def test_a_check_of_the_gpu_generation(text, category):
    result = diagnose(text, exit_code=1)
    assert result.category == category
    assert set(result.alternatives) & {"cuda_arch_or_driver", "bad_argument"}


def test_a_quantization_method_the_build_does_not_list_is_quantization_unsupported():
    line = ("vllm serve: error: argument --quantization/-q: invalid choice: 'mxint4' (choose from 'awq', 'fp8', "
            "'gptq')")
    result = diagnose(line + "\n", exit_code=2)
    assert result.category == "quantization_unsupported"
    assert "mxint4" in result.cause and "bad_argument" in result.alternatives


def test_a_command_given_with_the_log_is_what_the_advice_says_the_launch_passes() -> None:
    # No plan, only the command a person ran: its flags are the launch's (sglang server_args.py's PD-Multiplexing check).
    result = diagnose("AssertionError: PD-Multiplexing is not compatible with chunked prefill.",
                      command="python -m sglang.launch_server --model-path /models/m --chunked-prefill-size 8192 "
                              "--enable-pdmux")
    assert result.category == "bad_argument"
    assert "the plan passes --chunked-prefill-size" in result.next_steps[0]
    # A command shlex cannot read (an unclosed quote) is split on blanks rather than refused.
    broken = diagnose("AssertionError: PD-Multiplexing is not compatible with chunked prefill.",
                      command="python -m sglang.launch_server --chunked-prefill-size 8192 --served-model-name 'x")
    assert "the plan passes --chunked-prefill-size" in broken.next_steps[0]
