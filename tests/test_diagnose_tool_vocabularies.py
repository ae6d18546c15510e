"""A crash no phrase rule knows whose lines speak the quantization's own vocabulary (its formats and kernels, and the
parameters only a quantized checkpoint has) is placed in the quantization's area, as an expert reading a new message
places it; the same frames without those words stay unplaced. A toolchain step of a kernel build failing in the
tool's own output format (cicc, nvlink, the assembler, make) is the build; ModelScope's own hub errors are the hub;
vLLM's Ray executor without a free GPU on its node is Ray's reservation, with Ray's steps. A GPU generation refused
inside the quantization's kernels is the quantization (where it was raised outranks the words at equal scores).

Written fresh: the parameter names are those vLLM's fused-MoE and FP8 loaders register (w13_input_scale,
w2_weight_scale_inv; vllm/model_executor/layers/fused_moe/layer.py), the formats' names those of
vllm/model_executor/layers/quantization/; the messages are not copied from a corpus log.
"""

from __future__ import annotations

import pytest

from bot.diagnose import diagnose

_LOADER = ('Traceback (most recent call last):\n'
           '  File "/opt/venv/lib/python3.12/site-packages/vllm/model_executor/models/{0}.py", line 512, in '
           'load_weights\n'
           "    param = params_dict[name]\n"
           "            ~~~~~~~~~~~^^^^^^\n")


@pytest.mark.parametrize(("model", "line"), [
    ("deepseek_v2", "KeyError: 'layers.7.mlp.experts.w13_input_scale'"),
    ("qwen3_moe", "KeyError: 'model.layers.0.self_attn.qkv_proj.qzeros'"),
    ("llama", "RuntimeError: Could not build the machete kernel for this shape (n=5120, k=3584)"),
    ("mixtral", "NotImplementedError: marlin_moe_wna16 has no path for 3-bit weights on this device"),
])
def test_the_quantizations_vocabulary_places_an_unknown_crash_in_its_area(model: str, line: str) -> None:
    result = diagnose(_LOADER.format(model) + line, exit_code=1, engine="vllm")
    assert result.category == "quantization_unsupported", result
    assert result.confidence < 0.7  # (placed by its area, not a phrase rule: modest, and says what else it may be)
    assert result.alternatives


def test_the_same_frames_without_those_words_stay_unplaced() -> None:
    result = diagnose(_LOADER.format("llama") + "KeyError: 'layers.7.mlp.experts.w13_weight'", exit_code=1,
                      engine="vllm")
    assert result.category != "quantization_unsupported", result


# The CUDA toolkit's front end and device linker, the GNU assembler and make, each in its own output format (written
# fresh in the tools' formats: "cicc: error:", nvlink's "nvlink error   :", as's "<file>.s: Assembler messages:",
# GNU make's "make: *** [<target>] Error <n>").
@pytest.mark.parametrize("line", [
    "cicc: error: unable to parse the input file /tmp/tmpxft_0001/moe_kernel.cpp1.ii",
    "nvlink error   : Undefined reference to '_Z12gemm_kernelPf' in 'build/gemm.o'",
    "/tmp/ccQ1x2.s: Assembler messages:",
    "make: *** [Makefile:42: build/kernels.o] Error 1",
])
def test_a_toolchain_step_failing_in_its_own_words_is_a_kernel_build(line: str) -> None:
    log = ("INFO 12-03 08:01:10 [compile.py:88] Building the fused MoE kernel for this GPU (first start)\n"
           f"{line}\nRuntimeError: Engine process failed to start. See stack trace for the root cause.")
    assert diagnose(log, exit_code=1).category == "jit_compile_failure"


# ModelScope's hub client in its own error classes (modelscope/hub/errors.py); the message is written fresh.
@pytest.mark.parametrize("error", ["NotExistError", "NotLoginException", "FileDownloadError"])
def test_modelscopes_own_hub_errors_are_the_hub_with_modelscopes_steps(error: str) -> None:
    log = ('  File "/usr/local/lib/python3.10/site-packages/modelscope/hub/api.py", line 301, in get_model\n'
           f"modelscope.hub.errors.{error}: the request for model Qwen/Qwen3-9B failed")
    result = diagnose(log, exit_code=1, engine="vllm")
    assert result.category == "hub_access", result
    steps = " ".join(result.next_steps)
    assert "modelscope" in steps.lower() and "VLLM_USE_MODELSCOPE" in steps and "huggingface.co" not in steps


def test_modelscopes_refusal_without_a_login_is_the_hub_and_names_the_path_to_check() -> None:
    # ModelScope's handle_http_response (modelscope/hub/errors.py) logs this before re-raising; the model is made up.
    log = ("2026-03-02 09:12:44,101 - modelscope - ERROR - Authentication token does not exist, failed to access model "
           "/srv/models/Qwen3-14B which may not exist or may be private. Please login first.\n"
           "requests.exceptions.HTTPError: 404 Client Error: Not Found for url: "
           "https://www.modelscope.cn/api/v1/models/srv/models/Qwen3-14B/revisions")
    result = diagnose(log, exit_code=1, engine="vllm")
    assert result.category == "hub_access", result
    steps = " ".join(result.next_steps)
    assert "/srv/models/Qwen3-14B" in steps and "VLLM_USE_MODELSCOPE" in steps and "modelscope login" in steps


def test_rays_executor_without_a_free_gpu_on_its_node_says_ray_holds_them_not_that_there_are_none() -> None:
    # vLLM's own check (vllm/executor/ray_utils.py initialize_ray_cluster); the resource dict is written fresh.
    log = ("(EngineCore_DP0 pid=812) ERROR 12-03 08:40:11 [core.py:708] ValueError: Current node has no GPU available."
           " current_node_resource={'CPU': 16.0, 'node:10.0.0.4': 1.0}. vLLM engine cannot start without GPU.")
    result = diagnose(log, exit_code=1)
    assert result.category == "other" and result.confidence >= 0.7, result
    steps = " ".join(result.next_steps)
    assert "ray status" in steps and "placement group" in steps and "--distributed-executor-backend mp" in steps
    assert "search" not in steps  # (the cause is known: no search of the issue tracker)


_FP8_PATH = ('Traceback (most recent call last):\n'
             '  File "/opt/venv/lib/python3.12/site-packages/vllm/model_executor/layers/quantization/utils/'
             'fp8_utils.py", line 140, in apply_w8a8_block_fp8_linear\n'
             "    output = cutlass_scaled_mm(q_input, weight, out_dtype=input.dtype)\n"
             '  File "/opt/venv/lib/python3.12/site-packages/vllm/_custom_ops.py", line 727, in cutlass_scaled_mm\n'
             "    torch.ops._C.cutlass_scaled_mm(out, a, b, scale_a, scale_b, bias)\n")


def test_a_gpu_generation_refused_inside_the_quantizations_kernels_is_the_quantization() -> None:
    # (where it was raised outranks the words at equal scores; a precompiled cutlass op is not a JIT build)
    result = diagnose(_FP8_PATH + "RuntimeError: Currently, block scaled fp8 gemm is not implemented for Hopper",
                      exit_code=1, engine="vllm")
    assert result.category == "quantization_unsupported", result
    assert "cuda_arch_or_driver" in result.alternatives


def test_the_same_refusal_outside_any_areas_code_is_the_gpu() -> None:
    result = diagnose("RuntimeError: Currently, block scaled fp8 gemm is not implemented for Hopper", exit_code=1)
    assert result.category == "cuda_arch_or_driver", result
