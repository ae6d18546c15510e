"""Wordings the diagnoser must place although no dev log carries them (issue 12: "an engine it has never seen"),
each written fresh from the engine's or library's own message (cited per case), none from the judged sets.
"""

from __future__ import annotations

import pytest

from bot.diagnose import diagnose

_SGL = "/usr/local/lib/python3.12/dist-packages/sglang/srt"
_SITE = "/usr/local/lib/python3.12/dist-packages"

# sglang/srt/model_loader/utils.py resolve_transformers_arch (--model-impl auto): the generic Transformers fallback
# class is not compatible with SGLang for an architecture it has no native model of. The wording (with SGLang's own
# "SGlang" spelling) as raised; reported for Qwen3_5MoeForCausalLM and BloomForCausalLM in public notes.
SGLANG_FALLBACK = f"""\
[2026-05-17 10:02:11] server_args=ServerArgs(model_path='/models/bloomz-7b1', tp_size=1, model_impl='auto')
Traceback (most recent call last):
  File "{_SGL}/model_executor/model_runner.py", line 812, in load_model
    self.model = get_model(model_config=self.model_config, load_config=self.load_config)
  File "{_SGL}/model_loader/utils.py", line 70, in resolve_transformers_arch
    raise ValueError(
ValueError: BloomForCausalLM has no SGlang implementation and the Transformers implementation is not compatible with SGLang.
"""

# The warning SGLang logs when the fallback IS compatible: a server that goes on to serve is healthy.
SGLANG_FALLBACK_WARNING = """\
[2026-05-17 10:02:11] WARNING utils.py:80: Foo2ForCausalLM has no SGLang implementation, falling back to Transformers implementation. Some features may not be supported and performance may not be optimal.
[2026-05-17 10:03:40] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)
[2026-05-17 10:03:42] The server is fired up and ready to roll!
"""

# importlib.metadata.version() on a distribution that is not installed (Python's stdlib message: "No package metadata
# was found for {name}"), as the engines' and transformers' version checks call it (transformers.utils.versions
# require_version, vllm's import-time version look-ups).
PACKAGE_METADATA_MISSING = f"""\
Traceback (most recent call last):
  File "{_SITE}/transformers/utils/versions.py", line 102, in require_version
    got_ver = importlib.metadata.version(pkg)
  File "/usr/lib/python3.12/importlib/metadata/__init__.py", line 889, in version
    return distribution(distribution_name).version
  File "/usr/lib/python3.12/importlib/metadata/__init__.py", line 410, in from_name
    raise PackageNotFoundError(name)
importlib.metadata.PackageNotFoundError: No package metadata was found for bitsandbytes
"""


def test_sglang_transformers_fallback_that_cannot_run_the_architecture_is_unsupported_architecture():
    result = diagnose(SGLANG_FALLBACK, exit_code=1)
    assert result.category == "unsupported_architecture"
    assert "BloomForCausalLM" in result.cause
    assert "has no SGlang implementation" in result.evidence[0].text
    assert any("BloomForCausalLM" in step for step in result.next_steps)


def test_sglang_fallback_warning_on_a_server_that_came_up_is_healthy():
    assert diagnose(SGLANG_FALLBACK_WARNING).category == "none"


@pytest.mark.parametrize("log", [PACKAGE_METADATA_MISSING, PACKAGE_METADATA_MISSING.splitlines()[-1]])
def test_a_distribution_without_metadata_is_a_missing_dependency(log):
    # The whole traceback and the bare last line (a short fragment) alike.
    result = diagnose(log, exit_code=1)
    assert result.category == "missing_dependency"
    assert "bitsandbytes" in result.cause


# vLLM's worker dies while its drafter loads: the load began (vllm/v1/worker/gpu_model_runner.py load_model logs
# "Loading drafter model..." after the target's "Loading weights took"), "Model loading took" never came, and the
# only error line is the executor's generic one (vllm/v1/executor/multiproc_executor.py "WorkerProc failed to start.").
DRAFTER_LOAD_DIED = """\
(Worker_TP0 pid=529) INFO 03-11 09:14:02 [default_loader.py:267] Loading weights took 41.20 seconds
(Worker_TP0 pid=529) INFO 03-11 09:14:02 [gpu_model_runner.py:2641] Loading drafter model...
(Worker_TP1 pid=530) INFO 03-11 09:14:02 [gpu_model_runner.py:2641] Loading drafter model...
(Worker_TP0 pid=529) ERROR 03-11 09:14:04 [multiproc_executor.py:597] WorkerProc failed to start.
(EngineCore_DP0 pid=311) ERROR 03-11 09:14:05 [core.py:708] EngineCore failed to start.
"""

# The same generic end after the whole model (drafter included) loaded and the KV cache was sized: not the drafter.
AFTER_MODEL_LOADED = DRAFTER_LOAD_DIED.replace(
    "(Worker_TP0 pid=529) ERROR",
    "(Worker_TP0 pid=529) INFO 03-11 09:14:03 [gpu_model_runner.py:2700] Model loading took 15.10 GiB and 43.1 s\n"
    "(Worker_TP0 pid=529) INFO 03-11 09:14:03 [kv_cache_utils.py:1000] GPU KV cache size: 120,000 tokens\n"
    "(Worker_TP0 pid=529) ERROR", 1)


def test_a_worker_that_dies_while_its_drafter_loads_is_the_speculative_setup():
    result = diagnose(DRAFTER_LOAD_DIED, exit_code=1)
    assert result.category == "speculative_config_invalid"
    assert result.confidence < 0.7  # placed by where it died, not by a message that says why


def test_the_drafter_phase_is_over_once_the_model_loading_line_came():
    assert diagnose(AFTER_MODEL_LOADED, exit_code=1).category != "speculative_config_invalid"


# SGLang's EAGLE worker captures the drafter's CUDA graphs after the target's (sglang/srt/speculative/eagle_worker.py
# "Capture draft cuda graph begin. This can take up to several minutes. avail mem=..."), then runs out of memory with
# torch's bare CUDA error (no allocation size, no phase in the message).
DRAFT_GRAPH_OOM = """\
[2026-02-10 08:01:10 TP0] Capture cuda graph end. Time elapsed: 21.40 s. mem usage=1.10 GB. avail mem=2.05 GB.
[2026-02-10 08:01:11 TP0] Capture draft cuda graph begin. This can take up to several minutes. avail mem=2.05 GB
[2026-02-10 08:01:13 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", line 2900, in run_scheduler_process
    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity of 79.19 GiB of which 301.00 MiB is free.
"""


def test_an_oom_while_sglang_captures_the_drafters_graphs_is_cuda_graph_oom():
    result = diagnose(DRAFT_GRAPH_OOM, exit_code=1)
    assert result.category == "cuda_graph_oom"


# PyTorch's dispatcher refuses an op the installed build registered only for other backends: a vLLM wheel built for
# the CPU (vllm-project/vllm#12441, "'_C::rms_norm' is only available for these backends: [CPU, Meta, ...]"), written
# here for another of its custom ops and a worker-prefixed line.
OP_NOT_BUILT_FOR_CUDA = """\
(VllmWorker rank=0 pid=4410) ERROR 02-11 14:01:37 [multiproc_executor.py:435] NotImplementedError: Error in calling custom op silu_and_mul: Could not run '_C::silu_and_mul' with arguments from the 'CUDA' backend. This could be because the operator doesn't exist for this backend, or was omitted during the selective/custom build process (if using custom build). '_C::silu_and_mul' is only available for these backends: [CPU, Meta, BackendSelect, Python].
(VllmWorker rank=0 pid=4410) ERROR 02-11 14:01:37 [multiproc_executor.py:435] CPU: registered at /workspace/csrc/torch_bindings.cpp:18 [kernel]
"""


def test_an_op_the_installed_build_lacks_for_cuda_is_a_mismatched_package_build():
    result = diagnose(OP_NOT_BUILT_FOR_CUDA, exit_code=1)
    assert result.category == "missing_dependency"
    assert "_C::silu_and_mul" in result.cause and "CUDA" in result.cause
    assert "cuda_arch_or_driver" in result.alternatives


def test_any_value_argparse_refuses_is_a_bad_argument_with_the_flag_named():
    # vLLM's JSON flag parser (vllm/engine/arg_utils.py parse_type) after a shell split the JSON, as argparse prints
    # it ("prog: error: argument --x: message"); seen with --speculative-config in public launch scripts.
    log = ("usage: api_server.py [-h] [--host HOST] [--port PORT]\n"
           "api_server.py: error: argument --hf-overrides: Value rope_scaling:yarn cannot be converted to "
           "<function loads at 0x7f2c1a2b3d80>.\n")
    result = diagnose(log, exit_code=2)
    assert result.category == "bad_argument"
    assert "--hf-overrides" in result.next_steps[0] and "cannot be converted" in result.next_steps[0]


def test_more_gpus_asked_than_vllm_sees_is_a_bad_argument_with_the_gpu_count_advice():
    # vllm/executor/ray_utils.py (vllm-project/vllm#3416: --tensor-parallel-size above the pod's GPU limit).
    log = """\
  File "/usr/local/lib/python3.10/site-packages/vllm/executor/ray_utils.py", line 107, in initialize_cluster
    raise ValueError(
ValueError: The number of required GPUs exceeds the total number of available GPUs in the cluster.
"""
    result = diagnose(log, exit_code=1, engine="vllm")
    assert result.category == "bad_argument"
    assert "--tensor-parallel-size" in result.next_steps[0]


# transformers' config class lacks a field the engine's model code reads (QwenLM/Qwen3#724: vLLM on Qwen2-57B-A14B,
# "'Qwen2MoeConfig' object has no attribute 'mlp_only_layers'", fixed by a newer transformers), written here for
# another field and raised, as there, through transformers/configuration_utils.py __getattribute__.
CONFIG_FIELD_MISSING = """\
[rank0]:   File "/usr/local/lib/python3.12/dist-packages/vllm/model_executor/models/qwen3_next.py", line 210, in __init__
[rank0]:     self.layer_types = config.layer_types
[rank0]:   File "/usr/local/lib/python3.12/dist-packages/transformers/configuration_utils.py", line 207, in __getattribute__
[rank0]:     return super().__getattribute__(key)
[rank0]: AttributeError: 'Qwen3NextConfig' object has no attribute 'layer_types'
"""


def test_a_config_class_without_a_field_the_model_code_reads_is_transformers_too_old():
    result = diagnose(CONFIG_FIELD_MISSING, exit_code=1)
    assert result.category == "transformers_too_old"
    assert result.confidence < 0.7 and "unsupported_architecture" in result.alternatives
    assert "Qwen3NextConfig" in result.next_steps[0] and "'layer_types'" in result.next_steps[0]


def test_the_same_error_inside_the_fallback_class_stays_unsupported_architecture():
    log = CONFIG_FIELD_MISSING.replace("vllm/model_executor/models/qwen3_next.py", "vllm/model_executor/models/transformers.py")
    assert diagnose(log, exit_code=1).category == "unsupported_architecture"


def test_a_drafter_with_a_shorter_context_than_the_deployment_is_the_speculative_setup():
    # vllm-project/vllm#22935 (vllm/engine/arg_utils.py): its example, an EAGLE head of 2048 positions.
    log = ("(APIServer pid=1) ValueError: The draft model config's max_model_len (2048) is less than the deployment's "
           "max_model_len (131072).--max-model-len should be decreased to match.\n")
    result = diagnose(log, exit_code=1, engine="vllm")
    assert result.category == "speculative_config_invalid"
    assert "2048" in result.cause and "131072" in result.cause


def test_an_unknown_error_naming_a_speculative_flag_is_placed_with_the_drafter_not_the_arguments():
    # A --speculative-* flag names the drafter's setup; the wording is new to every rule (written after SGLang's DFlash
    # launch helper's "--speculative-draft-model-path is required when DFlash is enabled").
    log = ("[2026-04-02 11:20:01] ValueError: DFlash draft layers missing from the checkpoint; pass a DFlash drafter "
           "with --speculative-draft-model-path\n")
    result = diagnose(log, exit_code=1)
    assert result.category == "speculative_config_invalid"


@pytest.mark.parametrize("frames", [
    # PyTorch's capture context (torch/cuda/graphs.py: torch.cuda.graph.__exit__ ends the capture)
    '  File "/usr/local/lib/python3.12/dist-packages/torch/cuda/graphs.py", line 186, in __exit__\n'
    '    self.cuda_graph.capture_end()\n',
    # vLLM's piecewise backend, which captures one graph per compiled piece (vllm/compilation/)
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/compilation/cuda_piecewise_backend.py", line 190, in '
    '__call__\n    entry.runnable(*args)\n',
])
def test_an_oom_raised_inside_graph_capture_frames_is_cuda_graph_oom(frames):
    # No start-up line in the tail: the frames alone say the capture was running.
    log = ("Traceback (most recent call last):\n"
           '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_worker.py", line 370, in '
           "compile_or_warm_up_model\n"
           + frames +
           "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of "
           "23.55 GiB of which 11.31 MiB is free.\n")
    assert diagnose(log, exit_code=1).category == "cuda_graph_oom"


def test_cuda_running_out_of_peer_mappings_is_multi_gpu_communication():
    # cudaErrorTooManyPeers's text in the CUDA runtime ("peer mapping resources exhausted"): P2P enabled between more
    # GPUs than the hardware maps, as a custom all-reduce or NCCL sets it up at TP > 8.
    log = ("[rank9]: Traceback (most recent call last):\n"
           '[rank9]:   File "/usr/local/lib/python3.12/dist-packages/vllm/distributed/device_communicators/'
           'custom_all_reduce.py", line 95, in __init__\n'
           "[rank9]:     handles, offsets = self._get_ipc_meta(self.meta)\n"
           "[rank9]: RuntimeError: CUDA error: peer mapping resources exhausted\n")
    assert diagnose(log, exit_code=1).category == "nccl_error"
    assert diagnose(log.splitlines()[-1].removeprefix("[rank9]: "), exit_code=1).category == "nccl_error"


def test_a_tokenizer_json_the_installed_tokenizers_cannot_parse_is_transformers_too_old():
    # The tokenizers library's serde error, raised from TokenizerFast.from_file (ggml-org/llama.cpp#12819's traceback
    # shape, Llama 4's tokenizer.json; fixed by upgrading transformers/tokenizers in mrwu-mac/ControlMLLM#9).
    log = f"""\
  File "{_SITE}/transformers/tokenization_utils_fast.py", line 116, in __init__
    fast_tokenizer = TokenizerFast.from_file(fast_tokenizer_file)
Exception: data did not match any variant of untagged enum ModelWrapper at line 1251003 column 3
"""
    result = diagnose(log, exit_code=1)
    assert result.category == "transformers_too_old"
    assert "model_files_missing_or_corrupt" in result.alternatives
    assert "tokenizers" in result.next_steps[0]


def test_llama_31_rope_scaling_on_an_older_transformers_is_transformers_too_old():
    # transformers' LlamaConfig._rope_scaling_validation before 4.43, given Llama 3.1's rope_scaling.
    log = ("ValueError: `rope_scaling` must be a dictionary with two fields, `type` and `factor`, got {'factor': 8.0, "
           "'low_freq_factor': 1.0, 'high_freq_factor': 4.0, 'original_max_position_embeddings': 8192, "
           "'rope_type': 'llama3'}\n")
    result = diagnose(log, exit_code=1)
    assert result.category == "transformers_too_old"
    assert "4.43" in result.next_steps[0]


@pytest.mark.parametrize(("log", "named"), [
    # CUDA's cudaErrorInvalidDeviceFunction, as torch raises it
    ("RuntimeError: CUDA error: invalid device function\nCUDA kernel errors might be asynchronously reported at some "
     "other API call, so the stacktrace below might be incorrect.\n", None),
    # ROCm's wording of the same (hipErrorInvalidDeviceFunction, as torch raises it)
    ("RuntimeError: HIP error: invalid device function\nHIP kernel errors might be asynchronously reported at some "
     "other API call, so the stacktrace below might be incorrect.\n", None),
])
def test_kernels_not_compiled_for_this_gpu_in_other_words_are_the_gpu_architecture(log, named):
    result = diagnose(log, exit_code=1)
    assert result.category == "cuda_arch_or_driver"
    assert named is None or named in result.cause


def test_no_quantized_gemm_for_this_gpu_is_the_quantization_with_the_gpu_as_its_alternative():
    # vLLM's quantized GEMM dispatch (csrc/quantization/.../scaled_mm_entry.cu) on a wheel without sm_121 kernels:
    # the checkpoint's W8A8 / FP8 quantization has no kernel here (both corpus logs of it are filed so).
    log = ("RuntimeError: cutlass_scaled_mm, csrc/quantization/w8a8/cutlass/scaled_mm_entry.cu:265,\n"
           "NotImplementedError: No compiled cutlass_scaled_mm for a compute capability less than CUDA device "
           "capability: 121\n")
    result = diagnose(log, exit_code=1)
    assert result.category == "quantization_unsupported" and "121" in result.cause
    assert "cuda_arch_or_driver" in result.alternatives


def test_transformers_lazy_import_wrapping_a_package_of_the_wrong_version_is_a_missing_dependency():
    # transformers/utils/import_utils.py _LazyModule._get_module's wrapper around a huggingface_hub too old for it.
    log = ("RuntimeError: Failed to import transformers.generation.utils because of the following error (look up to "
           "see its traceback):\n"
           f"cannot import name 'split_torch_state_dict_into_shards' from 'huggingface_hub' "
           f"({_SITE}/huggingface_hub/__init__.py)\n")
    result = diagnose(log, exit_code=1)
    assert result.category == "missing_dependency"
    assert "transformers.generation.utils" in result.cause


def test_the_lazy_import_wrapper_leaves_the_wrapped_error_its_own_verdict():
    # The line under the wrapper is the more specific one: transformers itself lacks the class.
    log = ("RuntimeError: Failed to import transformers.models.auto because of the following error (look up to see "
           "its traceback):\n"
           f"cannot import name 'Qwen3VLConfig' from 'transformers' ({_SITE}/transformers/__init__.py)\n")
    assert diagnose(log, exit_code=1).category == "transformers_too_old"
