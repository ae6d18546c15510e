"""ModelSpec from the real configs in shared/configs: every file loads, and the figures match SIZES.md."""

from __future__ import annotations

import pytest

from planners.model import ConfigError, model_spec
from tests.test_planner_support import config_names, load_config


@pytest.mark.parametrize("name", config_names())
def test_every_config_loads_with_sane_dimensions(name: str) -> None:
    spec = model_spec(load_config(name))
    assert spec.architectures, name
    assert spec.num_layers == len(spec.layer_kinds)
    assert spec.num_attention_heads % spec.num_kv_heads == 0 or spec.is_mla
    assert spec.full_attention_layers > 0
    assert spec.params.total > 1e9
    assert spec.dtype_bytes == 2


def test_config_list_covers_the_corpus() -> None:
    # the tests below name these; a corpus without them would silently test less
    assert {"Llama-3.1-8B-Instruct", "Qwen3.6-27B", "DeepSeek-V3", "Qwen3-30B-A3B", "gemma-3-27b-it"} <= set(
        config_names()
    )


@pytest.mark.parametrize(
    ("name", "billions"),
    [
        ("Llama-3.1-8B-Instruct", 8.030),
        ("Llama-3.1-70B-Instruct", 70.55),
        ("Mistral-7B-Instruct-v0.3", 7.25),
        ("Qwen3-8B", 8.19),
        ("Qwen3-32B", 32.76),
        ("Qwen3-30B-A3B", 30.53),
        ("Qwen3.6-27B", 27.781427952),  # the real checkpoint's count: 27,781,427,952
        ("gemma-3-27b-it", 27.4),  # ~27.0 B text + ~0.4 B SigLIP (SIZES.md)
    ],
)
def test_parameter_counts_match_sizes_md(name: str, billions: float) -> None:
    total = model_spec(load_config(name)).params.total / 1e9
    assert total == pytest.approx(billions, rel=0.01)


def test_llama_dense_gqa() -> None:
    spec = model_spec(load_config("Llama-3.1-8B-Instruct"))
    assert (spec.num_layers, spec.num_attention_heads, spec.num_kv_heads, spec.head_dim) == (32, 32, 8, 128)
    assert not spec.is_moe and not spec.is_mla and not spec.is_hybrid_linear and not spec.is_multimodal
    assert spec.max_position_embeddings == 131072
    assert spec.mtp_layers is None
    assert spec.params.lm_head == spec.params.embedding  # untied


def test_qwen36_hybrid_multimodal_with_mtp() -> None:
    spec = model_spec(load_config("Qwen3.6-27B"))
    assert spec.architecture == "Qwen3_5ForConditionalGeneration"
    assert spec.text_model_type == "qwen3_5_text"
    assert (spec.full_attention_layers, spec.linear_attention_layers) == (16, 48)
    assert spec.layer_kinds[3] == "full" and spec.layer_kinds[0] == "linear"
    assert (spec.num_attention_heads, spec.num_kv_heads, spec.head_dim) == (24, 4, 256)
    assert (spec.linear_num_key_heads, spec.linear_num_value_heads) == (16, 48)
    assert spec.mtp_layers == 1
    assert spec.attn_output_gate
    assert spec.vision is not None and spec.vision.layers == 27
    assert spec.params.mtp / 1e9 == pytest.approx(0.425, rel=0.02)  # SIZES.md: MTP layer 0.425 B
    assert spec.params.vision / 1e9 == pytest.approx(0.46, rel=0.05)
    assert spec.params.text / 1e9 == pytest.approx(26.90, rel=0.005)
    assert spec.max_position_embeddings == 262144


def test_missing_mtp_key_means_unknown_not_none() -> None:
    spec = model_spec(load_config("Qwen3.5-27B"))  # vendored copy drops mtp_num_hidden_layers
    assert spec.mtp_layers is None
    assert spec.is_hybrid_linear


def test_deepseek_v3_moe_mla_fp8_mtp() -> None:
    spec = model_spec(load_config("DeepSeek-V3"))
    assert spec.is_mla and (spec.kv_lora_rank, spec.qk_rope_head_dim) == (512, 64)
    assert (spec.num_experts, spec.experts_per_token, spec.num_shared_experts) == (256, 8, 1)
    assert spec.moe_layers == 61 - 3  # first_k_dense_replace 3
    assert spec.mtp_layers == 1 and spec.mtp_stores_embeddings
    assert spec.quantization is not None and spec.quantization.is_fp8
    assert spec.quantization.block_size == (128, 128)
    assert spec.has_auto_map
    # README_WEIGHTS: 671B main model, 36.6B activated (+0.9B embedding we count), MTP 11.5B unique + 1.8B copies
    assert spec.params.text / 1e9 == pytest.approx(671.0, rel=0.005)
    assert spec.active_params / 1e9 == pytest.approx(36.6 + 0.9, rel=0.02)
    assert spec.params.mtp / 1e9 == pytest.approx(11.5 + 1.8, rel=0.03)


def test_qwen3_moe_active_parameters() -> None:
    spec = model_spec(load_config("Qwen3-30B-A3B"))
    assert (spec.num_experts, spec.experts_per_token, spec.moe_intermediate_size) == (128, 8, 768)
    assert spec.moe_layers == 48
    assert spec.active_params / 1e9 == pytest.approx(3.35, rel=0.02)


def test_gemma3_defaults_and_sliding_pattern() -> None:
    spec = model_spec(load_config("gemma-3-27b-it"))
    # omitted text keys come from Gemma3TextConfig defaults
    assert spec.vocab_size == 262208 and spec.tie_word_embeddings and spec.params.lm_head == 0
    assert spec.sliding_window == 1024
    assert (spec.full_attention_layers, spec.sliding_attention_layers) == (10, 52)  # one global layer in six
    assert spec.layer_kinds[5] == "full" and spec.layer_kinds[4] == "sliding"
    assert spec.vision is not None and spec.vision.layers == 27


def test_sliding_window_null_means_full_attention() -> None:
    spec = model_spec(load_config("Mistral-7B-Instruct-v0.3"))
    assert spec.sliding_window is None and spec.sliding_attention_layers == 0


def test_layer_types_win_over_interval_and_unknown_layer_kinds() -> None:
    config = load_config("Qwen3-8B")
    config["layer_types"] = ["sliding_attention", "full_attention"] * 18
    config["sliding_window"] = 4096
    spec = model_spec(config)
    assert (spec.full_attention_layers, spec.sliding_attention_layers) == (18, 18)


def test_mtp_zero_is_known_absent() -> None:
    config = load_config("DeepSeek-V3")
    config["num_nextn_predict_layers"] = 0
    spec = model_spec(config)
    assert spec.mtp_layers == 0 and spec.params.mtp == 0


def test_incomplete_config_is_refused_with_the_missing_keys() -> None:
    with pytest.raises(ConfigError, match="hidden_size"):
        model_spec({"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 2, "num_attention_heads": 2})
    with pytest.raises(ConfigError):
        model_spec(["not", "a", "dict"])  # type: ignore[arg-type]
