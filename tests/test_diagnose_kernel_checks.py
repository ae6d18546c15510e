"""Kernels' and loaders' own checks, in the words of their sources (written fresh, not copied from the corpus).

- vLLM's MoE WNA16 kernel (csrc/moe/moe_wna16.cu): TORCH_CHECK(size_k % BLOCK_SIZE_K == 0, "size_k must divisible
  by BLOCK_SIZE_K"): a weight's slice at this TP that the kernel's block does not divide.
- A TORCH_CHECK in a quantized GEMM failing on its inputs' dtype ("Expected a.dtype() == torch::kInt8 to be true, but
  got false"): Blackwell's CUTLASS scaled_mm has no INT8 path.
- A build's lookup of the GPU target ("Unknown GPU architecture: gfx1101. Supported architectures: [...]").
- vLLM's V1 FlashAttention backend refusing an FP8 KV cache ("FlashAttention V1 with FP8 KV cache not yet
  supported", v1/attention/backends/flash_attn.py in 0.7.4).
- A .gguf file handed to a transformers config reader ("It looks like the config file at '....gguf' is not a valid
  JSON file."): the build has no GGUF loader, not a corrupt config.
"""

from __future__ import annotations

from bot.diagnose import diagnose


def test_a_kernel_block_that_does_not_divide_the_weight_slice_is_the_tp_split() -> None:
    log = ("RuntimeError: Worker failed with error 'size_k must divisible by BLOCK_SIZE_K', please check the stack "
           "trace above for the root cause\n")
    assert diagnose(log, exit_code=1).category == "tp_not_divisible"


def test_a_quantized_gemm_refusing_its_input_dtype_is_the_quantization_on_this_gpu() -> None:
    log = "RuntimeError: Expected a.dtype() == torch::kInt8 to be true, but got false at torch.ops._C.cutlass_scaled_mm\n"
    result = diagnose(log, exit_code=1)
    assert result.category == "quantization_unsupported", result
    assert "cutlass_scaled_mm" in result.cause


def test_an_unknown_gpu_architecture_is_the_gpu() -> None:
    log = ("RuntimeError: Get GPU arch from rocminfo failed \"Unknown GPU architecture: gfx1201. Supported "
           "architectures: ['native', 'gfx90a', 'gfx942', 'gfx1100']\"\n")
    assert diagnose(log, exit_code=1).category == "cuda_arch_or_driver"


def test_an_attention_backend_refusing_an_fp8_kv_cache_names_the_flag_as_the_alternative() -> None:
    result = diagnose("NotImplementedError: FlashAttention V1 with FP8 KV cache not yet supported\n", exit_code=1)
    assert result.category == "quantization_unsupported" and "bad_argument" in result.alternatives, result


def test_a_gguf_file_read_as_a_json_config_is_the_format_this_build_lacks() -> None:
    log = ("OSError: It looks like the config file at '/models/qwen2.5-7b-instruct-q4_k_m.gguf' is not a valid JSON "
           "file.\n")
    result = diagnose(log, exit_code=1)
    assert result.category == "quantization_unsupported", result
    assert "model_files_missing_or_corrupt" in result.alternatives


def test_a_config_json_that_is_not_json_stays_a_model_file_and_names_no_empty_path() -> None:
    result = diagnose("OSError: It looks like the config file at '/models/m/config.json' is not a valid JSON file.\n",
                      exit_code=1)
    assert result.category == "model_files_missing_or_corrupt"
    assert not result.cause.endswith(":"), result.cause
    named = diagnose("FileNotFoundError: [Errno 2] No such file or directory: '/models/m/config.json'\n", exit_code=1)
    assert "/models/m/config.json" in named.cause, named.cause


def test_a_mistral_format_config_that_is_not_there_is_a_model_file() -> None:
    # vllm transformers_utils/config.py load_params_config
    log = ("ValueError: Failed to load mistral 'params.json' config for model org/Model-24B. Please check if the model "
           "is a mistral-format model and if the config file exists.\n")
    result = diagnose(log, exit_code=1)
    assert result.category == "model_files_missing_or_corrupt" and "params.json" in result.cause, result
