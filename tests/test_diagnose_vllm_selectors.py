"""vLLM's selectors refusing a launch: the hybrid KV-cache manager turned off, no attention backend for the model on
this GPU, no MoE kernel for the quantization, a forced MoE backend the path does not offer, a multimodal flag refused
because the release does not know the model as multimodal.

Each line is written fresh in the words of vLLM's own messages (see planners/engines/vllm/crash_rules.py for where
each comes from), with the engine core's prefix vLLM V1 logs them under; not copied from a corpus log.
"""

from __future__ import annotations

from bot.diagnose import diagnose

_CORE = "(EngineCore_DP0 pid=4410) ERROR 12-03 06:30:02 [core.py:1100] "


def test_the_hybrid_kv_manager_turned_off_is_the_launch_setting() -> None:
    result = diagnose(_CORE + "ValueError: Hybrid KV cache manager is disabled but failed to convert the KV cache "
                              "specs to one unified type.", engine="vllm")
    assert result.category == "bad_argument", result
    assert any("--disable-hybrid-kv-cache-manager" in step for step in result.next_steps)


def test_no_attention_backend_for_the_model_on_this_gpu_is_the_gpu_with_the_setting_as_alternative() -> None:
    log = "\n".join([
        _CORE + "ValueError: No valid attention backend found for cuda with AttentionSelectorConfig(head_size=576, "
                "dtype=torch.bfloat16, kv_cache_dtype=fp8, use_mla=True, use_sparse=True).",
        _CORE + "Reasons: {FLASHMLA: [compute capability not supported], TRITON_MLA: [sparse not supported]}",
    ])
    result = diagnose(log, engine="vllm")
    assert result.category == "cuda_arch_or_driver", result
    assert "bad_argument" in result.alternatives
    assert any("--kv-cache-dtype" in step for step in result.next_steps)


def test_no_moe_kernel_for_the_quantization_is_the_quantization() -> None:
    result = diagnose(_CORE + "NotImplementedError: No NVFP4 MoE backend supports the deployment configuration.",
                      engine="vllm")
    assert result.category == "quantization_unsupported", result
    assert "NVFP4" in result.cause


def test_a_forced_moe_backend_the_path_does_not_offer_is_the_setting() -> None:
    result = diagnose(_CORE + "ValueError: moe_backend='cutlass' is not supported for MXFP4 MoE. Expected one of "
                              "['triton', 'marlin', 'flashinfer_trtllm']", engine="vllm")
    assert result.category == "bad_argument", result
    assert "cutlass" in result.cause and any("moe_backend" in step for step in result.next_steps)


def test_a_multimodal_flag_refused_for_a_multimodal_checkpoint_is_the_architecture_not_the_flag() -> None:
    log = ("(APIServer pid=1) INFO 12-03 07:00:01 [utils.py:253] non-default args: {'model': 'org/NewVL-9B', "
           "'limit_mm_per_prompt': {'image': 4}}\n"
           "(APIServer pid=1) ValueError: `limit_mm_per_prompt` is only supported for multimodal models.")
    result = diagnose(log, engine="vllm")
    assert result.category == "unsupported_architecture", result
    assert "bad_argument" in result.alternatives
    assert any("multimodal" in step for step in result.next_steps)


def test_the_v1_engine_built_under_vllm_use_v1_false_is_the_environment_setting() -> None:
    result = diagnose("ValueError: Using V1 AsyncLLMEngine, but envs.VLLM_USE_V1=False. This should not happen. As a "
                      "workaround, try using AsyncLLMEngine.from_vllm_config(...) or explicitly set VLLM_USE_V1=0 or 1",
                      engine="vllm")
    assert result.category == "bad_argument", result
    assert any("VLLM_USE_V1" in step for step in result.next_steps)


def test_one_multimodal_item_over_the_batch_budget_is_the_setting_with_the_number_to_raise_to() -> None:
    for log in ("(APIServer pid=1) ValueError: Chunked MM input disabled but max_tokens_per_mm_item (2496) is larger "
                "than max_num_batched_tokens (512). Please increase max_num_batched_tokens.",
                "  Chunked MM input disabled but max_tokens_per_mm_item (2496) is larger\n"
                "  than max_num_batched_tokens (512)."):
        result = diagnose(log, engine="vllm")
        assert result.category == "bad_argument", result
        assert "None" not in result.cause
        assert any("--max-num-batched-tokens to at least 2496" in step for step in result.next_steps)


def test_argparse_usage_without_its_error_line_is_a_refused_argument() -> None:
    log = ("INFO 12-03 07:40:19 [__init__.py:239] Automatically detected platform cuda.\n"
           "usage: api_server.py [-h] [--host HOST] [--port PORT] [--uvicorn-log-level {debug,info,warning}]\n"
           "                     [--chat-template-content-format {auto,string,openai}]")
    result = diagnose(log, engine="vllm")
    assert result.category == "bad_argument", result
    named = diagnose(log + "\napi_server.py: error: unrecognized arguments: --enable-reasoning", engine="vllm")
    assert "--enable-reasoning" in named.cause


def test_the_kv_check_retold_short_by_the_person_pasting_it_is_still_the_kv_cache() -> None:
    result = diagnose("ValueError: 1.75 GiB KV cache is needed, available 0.13 GiB", engine="vllm")
    assert result.category == "kv_cache_insufficient", result
