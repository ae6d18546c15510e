"""A checkpoint's tensors that do not fit the engine's model class (bot/diagnose/weights_rules.py): the tensor's
name tells a quantized layout, a generic fallback class and a mismatched checkpoint apart. Each line is written from
the engines' loaders (vllm model_executor/models/utils.py AutoWeightsLoader's "There is no module or parameter
named", the per-model load_weights' KeyError on params_dict), not copied from the corpus."""

from __future__ import annotations

import pytest

from bot.diagnose import diagnose


@pytest.mark.parametrize(("line", "category"), [
    # GPTQ / AWQ / FP8 tensors a model class has no place for
    ("KeyError: 'model.layers.3.mlp.experts.0.down_proj.qweight'", "quantization_unsupported"),
    ("ValueError: There is no module or parameter named 'model.layers.0.mlp.gate.weight_scale' in Qwen3MoeForCausalLM",
     "quantization_unsupported"),
    # a quantized layer asked for .weight
    ("AttributeError: 'QKVParallelLinear' object has no attribute 'weight'", "quantization_unsupported"),
    # the generic fallback class
    ("ValueError: There is no module or parameter named 'vision_proj' in TransformersForCausalLM",
     "unsupported_architecture"),
    # another parameter the declared class lacks
    ("ValueError: There is no module or parameter named 'visual.merger.ln_q.weight' in Qwen2ForCausalLM",
     "model_files_missing_or_corrupt"),
    # an EAGLE-3 head's layer loaded by the target's model class (sglang models/llama_eagle3.py names it midlayer)
    ("KeyError: 'midlayer.mlp.down_proj.weight'", "speculative_config_invalid"),
])
def test_the_tensor_name_decides(line, category):
    result = diagnose(line + "\n", exit_code=1)
    assert result.category == category
    assert result.evidence[0].text == line


def test_a_plain_weight_keyerror_stays_unrecognised():
    # an ordinary tensor name says nothing of the cause by itself
    assert diagnose("KeyError: 'model.layers.13.mlp.experts.w13_weight'\n", exit_code=1).category == "other"


def test_a_bare_assert_on_the_split_is_tp_not_divisible_even_when_the_file_line_is_cut():
    log = ('odel_executor/models/chatglm.py", line 53, in __init__\n'
           "    assert self.total_num_kv_heads % tp_size == 0\nAssertionError\n")
    result = diagnose(log, exit_code=1)
    assert result.category == "tp_not_divisible"


def test_the_advice_for_a_mismatched_checkpoint_names_the_tensor_and_the_class():
    result = diagnose("ValueError: There is no module or parameter named 'visual.merger.ln_q.weight' in "
                      "Qwen2ForCausalLM\n", exit_code=1)
    assert "visual.merger.ln_q.weight" in result.next_steps[0] and "Qwen2ForCausalLM" in result.next_steps[0]
    assert "architectures" in result.next_steps[0]


@pytest.mark.parametrize("line", [
    "SGLang only supports sm75 and above",
    "RuntimeError: this build requires sm_80 or newer",
])
def test_the_engines_own_minimum_gpu(line):
    assert diagnose(line + "\n", exit_code=1).category == "cuda_arch_or_driver"


_SGLANG_UP = """\
[2026-06-16 11:23:49] KV Cache is allocated. #tokens: 2058562, K size: 13.42 GB, V size: 13.42 GB
[2026-06-16 11:23:49] Memory pool end. avail mem=38.26 GB
[2026-06-16 11:23:50] INFO:     Started server process [9]
[2026-06-16 11:23:50] INFO:     Waiting for application startup.
[2026-06-16 11:23:50] INFO:     Application startup complete.
[2026-06-16 11:23:50] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)
[2026-06-16 11:23:51] INFO:     127.0.0.1:55342 - "GET /model_info HTTP/1.1" 200 OK
"""


def test_sglang_refusing_its_warm_up_request_is_a_crash_not_still_starting():
    # SGLang logs its scheduler's refusal as a plain line, without a level, and the ready line never comes
    log = _SGLANG_UP + "[2026-06-16 11:23:51] Sliding window attention for audio tokens requires FlashInfer.\n"
    result = diagnose(log)
    assert result.category == "other"
    assert "warm-up request failed" in result.cause
    assert result.evidence[0].text.endswith("requires FlashInfer.")


def test_a_warm_up_still_under_way_stays_healthy():
    log = _SGLANG_UP + "[2026-06-16 11:23:51] Prefill batch, #new-seq: 1, #new-token: 6, #cached-token: 0\n"
    assert diagnose(log).category == "none"


@pytest.mark.parametrize(("text", "category"), [
    # the drafter's weights a checkpoint does not ship (vllm models/deepseek_mtp.py: the MTP layer's shared_head)
    ("ValueError: Following weights were not initialized from checkpoint: {'model.layers.61.shared_head.norm.weight'}"
     "\n", "speculative_config_invalid"),
    ("ValueError: Following weights were not initialized from checkpoint: {'lm_head.weight'}\n",
     "model_files_missing_or_corrupt"),
    # the NCCL watchdog carrying a kernel's crash is the kernel's
    ("[rank0]:[E416 13:29:57.332110411 ProcessGroupNCCL.cpp:2057] [PG ID 0 PG GUID 0 Rank 0] Process group watchdog "
     "thread terminated with exception: CUDA error: an illegal memory access was encountered\n", "other"),
    # a kernel build's tool or compiler backend
    ("[2025-12-15 17:14:46 TP0] Failed to load JIT fused kernel: ninja exited with status 1\n", "jit_compile_failure"),
    ("error: flash_attn.py:88:0: stack frame size (140000) exceeds limit (131056) in function 'attn_fwd'\n",
     "jit_compile_failure"),
    # a CUDA driver API function missing from libcuda
    ("ImportError: /usr/lib/python3/dist-packages/sgl_kernel/common_ops.abi3.so: undefined symbol: cuTensorMapEncodeIm2col"
     "\n", "cuda_arch_or_driver"),
    # a C++ symbol missing, the paste wrapped after "undefined symbol:"
    ("ImportError: /opt/venv/lib/python3.12/site-packages/sgl_kernel/common_ops.abi3.so: undefined symbol:\n"
     "_ZN3c104cuda9SetDeviceEi\n", "missing_dependency"),
    # Ascend's kernels built for another SoC
    ("RuntimeError: Can not support soc_version: 250.\n", "cuda_arch_or_driver"),
])
def test_build_driver_and_device_wordings(text, category):
    assert diagnose(text, exit_code=1).category == category


def test_vllms_cuda_extension_warning_is_routine_on_another_platform():
    log = """\
INFO 06-23 13:44:05 [__init__.py:235] Platform plugin ascend is activated
WARNING 06-23 13:44:08 [_custom_ops.py:22] Failed to import from vllm._C with ImportError('/opt/vllm/_C.abi3.so: undefined symbol: _ZN3c104Type3getEv')
"""
    assert diagnose(log).category == "none"
    # ... but on CUDA it is the broken binary
    assert diagnose(log.replace("ascend", "cuda")).category == "missing_dependency"


@pytest.mark.parametrize("line", [
    "LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.shfl.sync.bfly.i32",
    "error: failures have been detected while processing an MLIR pass pipeline",
    "RuntimeError: PassManager::run failed",
    "RuntimeError: NVRTC_ERROR_COMPILATION (6)",
])
def test_a_compiler_backends_own_failure_is_a_kernel_build(line):
    assert diagnose(line + "\n", exit_code=1).category == "jit_compile_failure"


@pytest.mark.parametrize(("log", "category"), [
    # a traceback cut inside zmq's bind (the "Address already in use" line lost)
    ("Traceback (most recent call last):\n"
     '  File "/opt/venv/lib/python3.10/site-packages/vllm/entrypoints/openai/rpc/server.py", line 30, in __init__\n'
     '    self.socket.bind(f"tcp://127.0.0.1:{port}")\n'
     '  File "/opt/venv/lib/python3.10/site-packages/zmq/sugar/socket.py", line 311, in bind\n'
     "    super().bind(addr)\n", "port_in_use"),
    # ... and inside the KV cache's sizing
    ("Traceback (most recent call last):\n"
     '  File "/opt/venv/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 80, in __init__\n'
     "    kv_cache_configs = get_kv_cache_configs(vllm_config, kv_cache_specs, available_gpu_memory)\n"
     '  File "/opt/venv/lib/python3.12/site-packages/vllm/v1/core/kv_cache_utils.py", line 1100, in '
     "check_enough_kv_cache_memory\n"
     "    raise ValueError(\n", "kv_cache_insufficient"),
])
def test_a_traceback_cut_before_its_exception_is_placed_by_its_frames(log, category):
    assert diagnose(log, exit_code=1).category == category


@pytest.mark.parametrize(("text", "category"), [
    ("ValueError: max_num_seqs (512) exceeds available Mamba cache blocks (300).\n", "kv_cache_insufficient"),
    ("RuntimeError: Not enough memory for 16 blocks of KV cache.\n", "kv_cache_insufficient"),
    # the NVIDIA kernel driver's allocation failure, as dmesg shows it on a unified-memory host
    ("Aug 01 18:03:03 spark kernel: NVRM: nvCheckOkFailedNoLog: Check failed: Out of memory [NV_ERR_NO_MEMORY] (0x00000051)"
     "\n", "gpu_oom_weights"),
])
def test_more_memory_wordings(text, category):
    assert diagnose(text, exit_code=1).category == category


@pytest.mark.parametrize(("text", "category"), [
    # a traceback cut before its exception line: the raise statement's literal is the message
    ('  File "/opt/venv/lib/python3.12/site-packages/vllm/transformers_utils/config.py", line 300, in get_config\n'
     '    raise ValueError(f"No supported config format found in {model}.")\n', "model_files_missing_or_corrupt"),
    ("OSError: Found 0 files matching the pattern: `^tekken\\.json$`. Make sure that a Mistral tokenizer is present\n",
     "model_files_missing_or_corrupt"),
    ("ERROR 05-12 15:40:22 engine.py:400] The model: Qwen/Qwen3-8B has no revision: v2.1 !\n", "hub_access"),
])
def test_the_loaders_and_hubs_other_wordings(text, category):
    assert diagnose(text, exit_code=1).category == category
