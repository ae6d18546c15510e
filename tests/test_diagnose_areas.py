"""Crashes no phrase rule knows, classified by structure (bot/diagnose/areas.py): the package the exception was raised
in, its class, the vocabulary of its error lines; and a short fragment that ends on an error is never healthy.

Every message below is an engine's or library's own text, from its source or a public issue thread (cited per case);
the frame paths are the packages' real source layout. None comes from the judged crash-log sets.
"""

from __future__ import annotations

import pytest

from bot.diagnose import diagnose

_SGL = "/usr/local/lib/python3.12/dist-packages/sglang/srt"
_VLLM = "/usr/local/lib/python3.12/dist-packages/vllm"
_SITE = "/usr/local/lib/python3.12/dist-packages"

CASES = {
    # flashinfer/jit/core.py JitSpec.build_and_load (flashinfer-ai/flashinfer, main): the JIT cache lacks a module
    # and JIT builds are switched off. Raised in flashinfer's JIT package: a kernel build problem.
    "jit_disabled_cache_miss": ("jit_compile_failure", f"""\
[2026-03-02 10:01:12 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "{_SGL}/managers/scheduler.py", line 2900, in run_scheduler_process
    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)
  File "{_SGL}/layers/attention/flashinfer_backend.py", line 140, in __init__
    self.prefill_wrapper = BatchPrefillWithPagedKVCacheWrapper(self.workspace_buffer, "NHD")
  File "{_SITE}/flashinfer/prefill.py", line 1320, in __init__
    self._cached_module = get_batch_prefill_module(backend, *args)
  File "{_SITE}/flashinfer/jit/core.py", line 312, in build_and_load
    raise MissingJITCacheError(
flashinfer.jit.core.MissingJITCacheError: JIT compilation is disabled via FLASHINFER_DISABLE_JIT environment \
variable, but the required module is not found in the JIT cache. Please add the missing module to the JIT cache build \
configuration.
[2026-03-02 10:01:12] Received sigquit from a child process. It usually means the child failed.
"""),
    # Triton's NVIDIA backend lowering a kernel (triton/backends/nvidia/compiler.py make_ttgir -> pm.run): MLIR's
    # "PassManager::run failed" (triton-lang/triton issues, e.g. #4925). No phrase rule knows it; the frames do.
    "triton_pass_manager": ("jit_compile_failure", f"""\
(EngineCore_DP0 pid=4211) ERROR 02-11 09:12:40 [core.py:708] Traceback (most recent call last):
(EngineCore_DP0 pid=4211) ERROR 02-11 09:12:40 [core.py:708]   File "{_VLLM}/v1/worker/gpu_model_runner.py", line 2310, in _dummy_run
(EngineCore_DP0 pid=4211) ERROR 02-11 09:12:40 [core.py:708]     outputs = self.model(input_ids=input_ids, positions=positions)
(EngineCore_DP0 pid=4211) ERROR 02-11 09:12:40 [core.py:708]   File "{_SITE}/triton/compiler/compiler.py", line 300, in compile
(EngineCore_DP0 pid=4211) ERROR 02-11 09:12:40 [core.py:708]     next_module = compile_ir(module, metadata)
(EngineCore_DP0 pid=4211) ERROR 02-11 09:12:40 [core.py:708]   File "{_SITE}/triton/backends/nvidia/compiler.py", line 251, in make_ttgir
(EngineCore_DP0 pid=4211) ERROR 02-11 09:12:40 [core.py:708]     pm.run(mod)
(EngineCore_DP0 pid=4211) ERROR 02-11 09:12:40 [core.py:708] RuntimeError: PassManager::run failed
(EngineCore_DP0 pid=4211) ERROR 02-11 09:12:40 [core.py:708] EngineCore failed to start.
"""),
    # flashinfer's JIT as a one-line paste (no traceback): the class and the words say JIT.
    "jit_fragment_no_frames": ("jit_compile_failure", """\
flashinfer.jit.core.MissingJITCacheError: JIT compilation is disabled via FLASHINFER_DISABLE_JIT environment variable, \
but the required module is not found in the JIT cache.
"""),
    # vLLM's speculative config check for a Qwen3-Omni DSpark drafter (vllm/config/speculative.py,
    # _validate_qwen3_omni_dspark): no phrase rule has this wording; its words are the drafter's.
    "spec_dspark_block_size": ("speculative_config_invalid", f"""\
(APIServer pid=812) Traceback (most recent call last):
(APIServer pid=812)   File "{_VLLM}/engine/arg_utils.py", line 1530, in create_engine_config
(APIServer pid=812)     speculative_config = self.create_speculative_config(target_model_config=model_config)
(APIServer pid=812)   File "{_VLLM}/config/speculative.py", line 740, in __post_init__
(APIServer pid=812)     _validate_qwen3_omni_dspark(self.target_model_config, self.draft_model_config, n)
(APIServer pid=812) ValueError: Qwen3-Omni DSpark requires num_speculative_tokens to match the trained block_size (4); \
got 3.
"""),
    # sgl-project/sglang#36528: EAGLE3 without a draft path loads the target as the drafter; the EAGLE worker calls
    # set_embed, which a plain Qwen2ForCausalLM does not have.
    "spec_eagle_worker_attribute": ("speculative_config_invalid", f"""\
[2026-08-26 12:00:03 TP0] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=70.12 GB
[2026-08-26 12:00:05 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "{_SGL}/managers/scheduler.py", line 2900, in run_scheduler_process
    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)
  File "{_SGL}/managers/scheduler.py", line 412, in __init__
    self.draft_worker = DraftWorkerClass(**draft_worker_kwargs)
  File "{_SGL}/speculative/eagle_worker.py", line 160, in __init__
    self.draft_model_runner.model.set_embed(embed)
  File "{_SITE}/torch/nn/modules/module.py", line 1940, in __getattr__
    raise AttributeError(
AttributeError: 'Qwen2ForCausalLM' object has no attribute 'set_embed'
"""),
    # vllm-project/vllm#29109: the EAGLE head of Llama 4 lacks lm_head (pasted as its last line only).
    "spec_fragment_eagle_head": ("speculative_config_invalid", """\
AttributeError: 'EagleLlama4ForCausalLM' object has no attribute 'lm_head'
"""),
    # torch.distributed's own message (torch/distributed/distributed_c10d.py _get_default_group), raised inside it:
    # multi-GPU communication was never set up. No phrase rule names it; the package path does.
    "dist_default_group": ("nccl_error", f"""\
[rank1]: Traceback (most recent call last):
[rank1]:   File "{_VLLM}/distributed/parallel_state.py", line 1010, in init_distributed_environment
[rank1]:     world_size = torch.distributed.get_world_size()
[rank1]:   File "{_SITE}/torch/distributed/distributed_c10d.py", line 2210, in get_world_size
[rank1]:     return _get_group_size(group)
[rank1]:   File "{_SITE}/torch/distributed/distributed_c10d.py", line 1080, in _get_default_group
[rank1]:     raise ValueError(
[rank1]: ValueError: Default process group has not been initialized, please make sure to call init_process_group.
"""),
    # A traceback pasted onto one line (issue text that lost its newlines): the import failure is the last exception.
    "import_squashed_line": ("missing_dependency", f"""\
Traceback (most recent call last):   File "{_SGL}/layers/quantization/fp8_kernel.py", line 31, in <module>     from \
sgl_kernel import sgl_per_token_group_quant_fp8 ImportError: cannot import name 'sgl_per_token_group_quant_fp8' from \
'sgl_kernel'
"""),
    # torch's c10d TCPStore (torch/csrc/distributed/c10d/socket.cpp): the bind failure is a [W] warning line, then
    # the listen failure; the rendezvous port 29500 is not the HTTP port.
    "port_c10d_warning": ("port_in_use", """\
INFO 05-11 08:00:01 [__init__.py:239] Automatically detected platform cuda.
[W511 08:00:09.412 socket.cpp:464] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address \
already in use).
[W511 08:00:09.413 socket.cpp:464] [c10d] The server socket has failed to bind to 0.0.0.0:29500 (errno: 98 - \
Address already in use).
[E511 08:00:09.413 socket.cpp:500] [c10d] The server socket has failed to listen on any local network address.
"""),
    # A short fragment cut inside SGLang's EAGLE worker: no exception line, no exit code, still a crash, and the
    # frames say where.
    "fragment_cut_in_drafter": ("speculative_config_invalid", f"""\
  File "{_SGL}/speculative/eagle_worker.py", line 160, in __init__
    self.draft_model_runner.model.set_embed(embed)
  File "{_SITE}/torch/nn/modules/module.py", line 1940, in __getattr__
"""),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_new_wording_is_placed_by_where_and_what(name: str) -> None:
    category, log = CASES[name]
    result = diagnose(log)
    assert result.category == category, (name, result.category, result.cause)
    assert result.evidence, name
    assert result.next_steps, name
    assert result.confidence <= 0.9


def test_an_area_verdict_is_modest_and_says_what_else_it_could_be() -> None:
    result = diagnose(CASES["jit_fragment_no_frames"][1])
    assert result.category == "jit_compile_failure"
    assert 0.4 <= result.confidence <= 0.6
    assert "other" in result.alternatives


# Short fragments that end on an error and never show the server alive: crashes, with or without an exit code.
FRAGMENTS = (
    # torch's own message (aten/src/ATen/native/TensorCompare etc.), pasted without its traceback
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!\n",
    # a traceback squashed onto one line, the exception in the middle of it
    'File "/x/site-packages/vllm/worker/worker.py", line 120, in init_device raise RuntimeError(msg) RuntimeError: '
    "Engine loop has died\n",
    # a C++ assert from a CUDA kernel (aten/src/ATen/native/cuda/IndexKernelUtils.cu, sgl-project/sglang#15638)
    "/pytorch/aten/src/ATen/native/cuda/IndexKernelUtils.cu:16: vectorized_gather_kernel: block: [64,0,0], thread: "
    "[224,0,0] Assertion `ind >=0 && ind < ind_dim_size && \"vectorized gather kernel index out of bounds\"` failed.\n",
)


@pytest.mark.parametrize("log", FRAGMENTS)
def test_a_short_fragment_that_ends_on_an_error_is_a_crash_without_an_exit_code(log: str) -> None:
    result = diagnose(log)
    assert result.category != "none", result.cause
    assert result.evidence and result.evidence[-1].line >= 1


def test_a_start_still_going_with_an_alarming_warning_is_not_a_crash() -> None:
    log = ("INFO 05-11 08:00:01 [__init__.py:239] Automatically detected platform cuda.\n"
           "WARNING 05-11 08:00:05 [config.py:3700] Error: the tokenizer has no chat template; using the default.\n"
           "2026-05-11 08:00:06,101 - INFO - flashinfer.jit: Prebuilt kernels not found, using JIT backend\n"
           "INFO 05-11 08:00:07 [gpu_model_runner.py:1800] Starting to load model /models/Qwen3-8B...\n")
    assert diagnose(log).category == "none"


def test_an_error_shaped_line_in_the_tail_is_quoted_not_sent_above_it() -> None:
    """Only framing lines plus a compiler's error: the advice quotes that error and never says the root cause was
    printed above this tail."""
    log = ("(EngineCore_DP0 pid=77) ERROR 02-11 09:12:40 [core.py:708] tvm_ffi/cpp/extension.cc:210: error: "
           "identifier \"__nv_fp8x4_e4m3\" is undefined in device code\n"
           "(EngineCore_DP0 pid=77) ERROR 02-11 09:12:40 [core.py:708] EngineCore failed to start.\n"
           "(APIServer pid=12) RuntimeError: Engine core initialization failed. See root cause above. Failed core "
           "proc(s): {}\n")
    result = diagnose(log)
    text = " ".join(result.next_steps) + result.cause
    assert "printed above this tail" not in text and "above this tail" not in text
    assert any("identifier" in e.text for e in result.evidence)


def test_a_tail_whose_error_line_is_elsewhere_is_placed_by_its_frames() -> None:
    """Only the consequence ("Engine core initialization failed") and a traceback through flashinfer's JIT package
    are in the tail: the frames say a kernel build, not "the root cause was printed above"."""
    log = f"""\
(EngineCore_DP0 pid=73) ERROR 02-11 09:12:40 [core.py:708] Traceback (most recent call last):
(EngineCore_DP0 pid=73) ERROR 02-11 09:12:40 [core.py:708]   File "{_VLLM}/v1/engine/core.py", line 699, in run_engine_core
(EngineCore_DP0 pid=73) ERROR 02-11 09:12:40 [core.py:708]     engine_core = EngineCoreProc(*args, **kwargs)
(EngineCore_DP0 pid=73) ERROR 02-11 09:12:40 [core.py:708]   File "{_SITE}/flashinfer/sampling.py", line 60, in get_sampling_module
(EngineCore_DP0 pid=73) ERROR 02-11 09:12:40 [core.py:708]     module = gen_sampling_module().build_and_load()
(EngineCore_DP0 pid=73) ERROR 02-11 09:12:40 [core.py:708]   File "{_SITE}/flashinfer/jit/core.py", line 321, in build_and_load
(EngineCore_DP0 pid=73) ERROR 02-11 09:12:40 [core.py:708]     self.build()
(APIServer pid=12) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {{}}
"""
    result = diagnose(log)
    assert result.category == "jit_compile_failure", result.cause
    assert not any("above this tail" in step for step in result.next_steps)


MORE_CASES = {
    # pip's dependency-conflict report (pip/_internal/operations/check.py) before a launch script starts the server.
    "pip_conflict": ("missing_dependency", """\
ERROR: pip's dependency resolver does not currently take into account all the packages that are installed. This \
behaviour is the source of the following dependency conflicts.
vllm 0.9.1 requires torch==2.7.0, but you have torch 2.8.0 which is incompatible.
"""),
    # torch's dispatcher when torchvision was built for another torch (pytorch/vision#7311, #8152).
    "torchvision_operator": ("missing_dependency", f"""\
Traceback (most recent call last):
  File "{_SITE}/torchvision/_meta_registrations.py", line 164, in <module>
    @register_meta("nms")
  File "{_SITE}/torch/library.py", line 795, in register
    use_lib._register_fake(op_name, func, _stacklevel=stacklevel + 1)
RuntimeError: operator torchvision::nms does not exist
"""),
    # A crash inside SGLang's NextN drafter model class (python/sglang/srt/models/deepseek_nextn.py).
    "nextn_model_class": ("speculative_config_invalid", f"""\
[2025-03-01 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "{_SGL}/model_executor/model_runner.py", line 380, in load_model
    self.model = get_model(model_config=self.model_config, load_config=self.load_config)
  File "{_SGL}/models/deepseek_nextn.py", line 118, in load_weights
    param = params_dict[name]
KeyError: 'model.decoder.mlp.experts.w2_weight_scale_inv'
"""),
}


@pytest.mark.parametrize("name", sorted(MORE_CASES))
def test_more_wordings_by_where_and_what(name: str) -> None:
    category, log = MORE_CASES[name]
    result = diagnose(log)
    assert result.category == category, (name, result.category, result.cause)
    assert result.next_steps


def test_a_plan_that_drafts_tips_an_unclear_crash_towards_the_drafter_but_never_alone() -> None:
    """Error lines that mention the drafter around an exception that does not: the launch's speculative settings (the
    plan, or vLLM's engine config line in the tail) tip it; without any evidence of its own it stays ``other``."""
    crash = ("(EngineCore_DP0 pid=9) ERROR 04-01 10:00:00 [core.py:700] hidden states of the draft step: [4, 2048]\n"
             "(EngineCore_DP0 pid=9) ERROR 04-01 10:00:00 [core.py:700] hidden states expected by the draft head: "
             "[4, 4096]\n"
             "(EngineCore_DP0 pid=9) ERROR 04-01 10:00:00 [core.py:700] RuntimeError: shape mismatch: [4, 2048] vs "
             "[4, 4096]\n")
    config = ("(EngineCore_DP0 pid=9) INFO 04-01 09:59:00 [core.py:80] Initializing a V1 LLM engine (v0.11.0) with "
              "config: model='/models/Llama-3.1-8B', speculative_config=SpeculativeConfig(method='eagle3', model="
              "'/models/EAGLE3-LLaMA3.1-8B', num_spec_tokens=3)\n")
    assert diagnose(crash).category == "other"
    assert diagnose(config + crash).category == "speculative_config_invalid"
    bare = "(EngineCore_DP0 pid=9) ERROR 04-01 10:00:00 [core.py:700] RuntimeError: shape mismatch: [4, 2048]\n"
    assert diagnose(config + bare).category == "other"


AREA_CASES = {
    # An IndexError inside SGLang's CUDA-graph capture (python/sglang/srt/model_executor/cuda_graph_runner.py):
    # torch's own message; the capture began and never ended.
    "capture_index_error": ("cuda_graph_oom", f"""\
[2025-05-02 09:00:00 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=20.31 GB
[2025-05-02 09:00:04 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "{_SGL}/model_executor/cuda_graph_runner.py", line 380, in capture
    ) = self.capture_one_batch_size(bs, forward)
  File "{_SGL}/model_executor/cuda_graph_runner.py", line 470, in capture_one_batch_size
    run_once()
  File "{_SGL}/layers/rotary_embedding.py", line 160, in forward_cuda
    cos_sin = self.cos_sin_cache[positions]
IndexError: index 32768 is out of bounds for dimension 0 with size 32768
"""),
    # vLLM's FlashMLA support check (vllm/attention/ops/flashmla.py is_flashmla_supported: "FlashMLA is only
    # supported on Hopper devices."), raised on another GPU.
    "flashmla_hopper_only": ("cuda_arch_or_driver", """\
(EngineCore_DP0 pid=311) ERROR 03-12 11:00:00 [core.py:708] ValueError: FlashMLA is only supported on Hopper devices.
"""),
    # An IndexError inside SGLang's own argument handling (python/sglang/srt/server_args.py).
    "server_args_index_error": ("bad_argument", f"""\
Traceback (most recent call last):
  File "{_SITE}/sglang/launch_server.py", line 11, in <module>
    server_args = prepare_server_args(sys.argv[1:])
  File "{_SGL}/server_args.py", line 3100, in prepare_server_args
    server_args = ServerArgs.from_cli_args(raw_args)
  File "{_SGL}/server_args.py", line 2990, in __post_init__
    self.cuda_graph_bs = sorted(self.cuda_graph_bs)[: self.cuda_graph_max_bs_index[0]]
IndexError: list index out of range
"""),
}


@pytest.mark.parametrize("name", sorted(AREA_CASES))
def test_capture_hardware_and_argument_areas(name: str) -> None:
    category, log = AREA_CASES[name]
    result = diagnose(log)
    assert result.category == category, (name, result.category, result.cause)
    assert result.next_steps and result.confidence <= 0.6


WORDINGS = {
    # torch/cuda/__init__.py _lazy_init when no GPU is visible to the process.
    "no_cuda_gpus": ("cuda_arch_or_driver", "RuntimeError: No CUDA GPUs are available\n"),
    # NVML after a driver upgrade without a reboot (the kernel module and the user-space library differ).
    "nvml_mismatch": ("cuda_arch_or_driver", "Failed to initialize NVML: Driver/library version mismatch\n"),
    # cudaErrorInvalidDevice's own string: more ranks than visible GPUs (a launch setting, not the driver).
    "invalid_ordinal": ("bad_argument",
                        "[rank3]: RuntimeError: CUDA error: invalid device ordinal\n"
                        "[rank3]: CUDA kernel errors might be asynchronously reported at some other API call, so the "
                        "stacktrace below might be incorrect.\n"),
    # vLLM's Model Runner V2 gate, a feature "not yet supported" by the newer runner
    # (intel/intel-xpu-backend-for-triton#7158: vllm/config/vllm.py _validate_v2_model_runner).
    "mrv2_not_yet": ("bad_argument", """\
pydantic_core._pydantic_core.ValidationError: 1 validation error for VllmConfig
  Value error, VLLM_USE_V2_MODEL_RUNNER does not yet support: hybrid/mamba models [type=value_error, \
input_value=ArgsKwargs((), {'model_co... use_non_causal=False)}), input_type=ArgsKwargs]
    For further information visit https://errors.pydantic.dev/2.13/v/value_error
"""),
    # vllm/entrypoints/openai/cli_args.py validate_parsed_serve_args.
    "auto_tool_choice": ("bad_argument", "(APIServer pid=1) TypeError: Error: --enable-auto-tool-choice requires "
                                          "--tool-call-parser\n"),
    # json raising while transformers reads the model folder's tokenizer.json (a git-lfs pointer in its place).
    "tokenizer_json": ("model_files_missing_or_corrupt", f"""\
Traceback (most recent call last):
  File "{_SITE}/transformers/tokenization_utils_base.py", line 2300, in _from_pretrained
    tokenizer = cls(*init_inputs, **init_kwargs)
  File "{_SITE}/transformers/tokenization_utils_fast.py", line 115, in __init__
    fast_tokenizer = TokenizerFast.from_file(fast_tokenizer_file)
  File "/usr/lib/python3.12/json/__init__.py", line 346, in loads
    return _default_decoder.decode(s)
json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)
"""),
}


@pytest.mark.parametrize("name", sorted(WORDINGS))
def test_driver_argument_and_file_wordings(name: str) -> None:
    category, log = WORDINGS[name]
    assert diagnose(log).category == category


def test_a_json_error_outside_the_model_folder_is_not_a_corrupt_file() -> None:
    log = ('Traceback (most recent call last):\n  File "/usr/lib/python3.12/json/__init__.py", line 346, in loads\n'
           "    return _default_decoder.decode(s)\njson.decoder.JSONDecodeError: Expecting value: line 1 column 1\n")
    assert diagnose(log).category != "model_files_missing_or_corrupt"


def test_a_start_that_ends_with_the_workers_exiting_is_a_crash() -> None:
    # CPython's resource tracker as the engine's worker processes exit (multiprocessing/resource_tracker.py).
    log = ("INFO 05-11 08:00:07 [gpu_model_runner.py:1800] Starting to load model /models/Qwen3-8B...\n"
           "/usr/lib/python3.12/multiprocessing/resource_tracker.py:279: UserWarning: resource_tracker: There appear "
           "to be 1 leaked semaphore objects to clean up at shutdown\n")
    assert diagnose(log).category != "none"


def test_the_engine_version_is_read_from_vllms_engine_config_line() -> None:
    """vLLM's "Initializing a V1 LLM engine (v0.16.0) with config" names the installed release: a model type that
    arrived in a later release (Qwen3.5, vLLM 0.17.0 by the compatibility table) is the engine being too old."""
    log = ("INFO 03-01 10:00:00 [core.py:70] Initializing a V1 LLM engine (v0.16.0) with config: model='/models/"
           "Qwen3.5-27B', speculative_config=None\n"
           "ValueError: The checkpoint you are trying to load has model type `qwen3_5` but Transformers does not "
           "recognize this architecture. This could be because of an issue with the checkpoint, or because your "
           "version of Transformers is out of date.\n")
    result = diagnose(log)
    assert result.category == "unsupported_architecture", result.cause
    assert "0.17.0" in result.cause and "0.16.0" in result.cause


def test_an_oom_far_below_its_phase_line_takes_the_last_milestone_reached() -> None:
    """torch's OOM message alone says nothing of the phase, and the phase line is further up than the lines read
    around an OOM: the start-up milestones of the whole tail still say when it struck."""
    oom = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
           "23.57 GiB of which 1.01 GiB is free.\n")
    filler = "".join(f"[2025-05-02 09:00:{i % 60:02d}] INFO:     worker {i} heartbeat\n" for i in range(120))
    loading = "[2025-05-02 09:00:00 TP0] Load weight begin. avail mem=23.40 GB\n"
    kv = "[2025-05-02 09:00:01 TP0] KV Cache is allocated. #tokens: 60000, K size: 2.75 GB, V size: 2.75 GB\n"
    assert diagnose(oom).cause.startswith("CUDA out of memory (the phase is not in the log")
    assert diagnose(loading + filler + oom).category == "gpu_oom_weights"
    assert diagnose(loading + kv + filler + oom).category == "kv_cache_insufficient"


# A vLLM worker's traceback cut below the frame that calls the capture (vllm/v1/worker/gpu_worker.py
# compile_or_warm_up_model: "cuda_graph_memory_bytes = self.model_runner.capture_model()", v0.1x main), with no
# capture milestone in the tail: the call names the phase.
_CUT_IN_CAPTURE = f"""\
(Worker_TP1 pid=88) ERROR 04-09 20:31:10 [multiproc_executor.py:949] WorkerProc hit an exception.
(Worker_TP1 pid=88) ERROR 04-09 20:31:10 [multiproc_executor.py:949] Traceback (most recent call last):
(Worker_TP1 pid=88) ERROR 04-09 20:31:10 [multiproc_executor.py:949]   File "{_VLLM}/v1/executor/multiproc_executor.py", line 944, in worker_busy_loop
(Worker_TP1 pid=88) ERROR 04-09 20:31:10 [multiproc_executor.py:949]     output = func(*args, **kwargs)
(Worker_TP1 pid=88) ERROR 04-09 20:31:10 [multiproc_executor.py:949]   File "{_VLLM}/v1/worker/gpu_worker.py", line 588, in compile_or_warm_up_model
(Worker_TP1 pid=88) ERROR 04-09 20:31:10 [multiproc_executor.py:949]     {{call}}
"""


def test_a_traceback_cut_inside_the_capture_call_is_the_capture() -> None:
    result = diagnose(_CUT_IN_CAPTURE.format(call="cuda_graph_memory_bytes = self.model_runner.capture_model()"))
    assert result.category == "cuda_graph_oom", result.cause
    assert result.confidence <= 0.6


def test_a_traceback_cut_inside_another_call_of_the_same_frame_is_not_the_capture() -> None:
    result = diagnose(_CUT_IN_CAPTURE.format(call="self.model_runner._dummy_sampler_run(hidden_states)"))
    assert result.category != "cuda_graph_oom", result.cause


def test_an_unknown_error_raised_inside_the_capture_is_the_capture_with_no_milestone_line() -> None:
    # sglang/srt/model_executor/cuda_graph_runner.py capture() -> capture_one_batch_size(): the taxonomy's "failure
    # during CUDA graph capture" even when the tail was cut above "Capture cuda graph begin".
    log = f"""\
Traceback (most recent call last):
  File "{_SGL}/model_executor/cuda_graph_runner.py", line 380, in capture
    self.capture_one_batch_size(bs, forward)
  File "{_SGL}/layers/rotary_embedding.py", line 95, in forward_cuda
    query, key = self.cos_sin_cache.index_select(0, positions)
IndexError: index out of range in self
"""
    result = diagnose(log, exit_code=1)
    assert result.category == "cuda_graph_oom", result.cause
    assert result.confidence <= 0.6 and "other" in result.alternatives
