"""Sane bounds for the numbers of a model's config.json, checked before anything is planned from them.

A config.json is written by whoever put the model on the host: it may say ``num_hidden_layers: 1e9`` (the planner
would build lists of a billion entries), a negative ``hidden_size`` (planned and launched, with a negative KV
cache), ``NaN`` or ``Infinity`` (Python's json reads both) or a string. Every dimension the planner reads is
checked here: a whole, finite number within what any real model has (the bounds are well above the largest
public checkpoints: DeepSeek-V3 has 61 layers and 256 experts, Llama-3.1-405B a hidden size of 16384, Gemma 3 a
vocabulary of 262,144) and below what memory could ever hold. A value outside is refused naming the key and the
value, as a planning failure.
"""

from __future__ import annotations

import math
from typing import Any

#: key -> (smallest, largest) allowed value. Keys absent from a config are not checked (defaults apply).
BOUNDS: dict[str, tuple[int, int]] = {
    # the trunk
    **dict.fromkeys(("num_hidden_layers", "num_layers", "n_layer", "depth"), (1, 1024)),
    **dict.fromkeys(("hidden_size", "d_model", "n_embd", "embed_dim", "out_hidden_size"), (1, 1 << 17)),
    **dict.fromkeys(("num_attention_heads", "n_head", "num_heads", "num_key_value_heads", "num_kv_heads"),
                    (1, 4096)),
    "head_dim": (1, 8192),
    **dict.fromkeys(("intermediate_size", "ffn_dim", "moe_intermediate_size", "shared_expert_intermediate_size"),
                    (1, 1 << 20)),
    "vocab_size": (1, 1 << 24),
    **dict.fromkeys(("max_position_embeddings", "max_sequence_length", "seq_length", "sliding_window"),
                    (0, 1 << 31)),
    # mixture of experts
    **dict.fromkeys(("num_experts", "n_routed_experts", "num_local_experts"), (0, 1 << 14)),
    **dict.fromkeys(("num_experts_per_tok", "moe_topk", "num_experts_per_token", "n_shared_experts",
                     "num_shared_experts"), (0, 1024)),
    **dict.fromkeys(("first_k_dense_replace", "moe_layer_freq", "decoder_sparse_step", "full_attention_interval",
                     "sliding_window_pattern"), (0, 1024)),
    # MLA, MTP, linear attention
    **dict.fromkeys(("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"),
                    (0, 1 << 16)),
    **dict.fromkeys(("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_layers"), (0, 64)),
    **dict.fromkeys(("linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
                     "linear_value_head_dim", "linear_conv_kernel_dim"), (0, 1 << 16)),
    # the vision tower
    **dict.fromkeys(("patch_size", "in_channels", "temporal_patch_size", "spatial_merge_size"), (0, 1024)),
    "image_size": (0, 1 << 16),
    "num_position_embeddings": (0, 1 << 24),
}
#: The quantization numbers the planner reads (group_size -1 is GPTQ's "one group per channel").
QUANT_BOUNDS: dict[str, tuple[int, int]] = {"bits": (1, 64), "w_bit": (1, 64), "group_size": (-1, 1 << 20),
                                            "q_group_size": (-1, 1 << 20)}
#: Lists of layer indices: as long as the layers at most, every item a layer index.
LAYER_LISTS = ("mlp_only_layers", "layer_types")
MAX_LAYERS = BOUNDS["num_hidden_layers"][1]
#: Where the planner reads dimensions from (planners/config_lookup.py: text_config first, then the top level).
SECTIONS = ("text_config", "llm_config", "language_config", "thinker_config", "vision_config")


class ConfigBoundsError(ValueError):
    """A number of config.json outside what a model can have; the message names the key and the value."""


def check_config(config: dict[str, Any]) -> None:
    """Raise ``ConfigBoundsError`` for the first out-of-bounds value (top level, then each section)."""
    _check_section(config, "")
    for section in SECTIONS:
        inner = config.get(section)
        if isinstance(inner, dict):
            _check_section(inner, f"{section}.")
    for holder, prefix in ((config, ""), *((config[s], f"{s}.") for s in SECTIONS if isinstance(config.get(s), dict))):
        quant = holder.get("quantization_config")
        if isinstance(quant, dict):
            for key, (low, high) in QUANT_BOUNDS.items():
                if quant.get(key) is not None:
                    _check_number(f"{prefix}quantization_config.{key}", quant[key], low, high)


def _check_section(values: dict[str, Any], prefix: str) -> None:
    for key, (low, high) in BOUNDS.items():
        if key in values and values[key] is not None:
            _check_number(f"{prefix}{key}", values[key], low, high)
    for key in LAYER_LISTS:
        value = values.get(key)
        if value is None:
            continue
        if not isinstance(value, list) or len(value) > MAX_LAYERS:
            raise ConfigBoundsError(f"{prefix}{key} must be a list of at most {MAX_LAYERS} items, got {_show(value)}")
        if key == "mlp_only_layers":
            for item in value:
                _check_number(f"{prefix}{key}[]", item, 0, MAX_LAYERS)


def _check_number(name: str, value: Any, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigBoundsError(f"{name} must be a whole number, got {_show(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigBoundsError(f"{name} must be a finite number, got {value}")
    if value != int(value):
        raise ConfigBoundsError(f"{name} must be a whole number, got {value}")
    if not low <= value <= high:
        raise ConfigBoundsError(f"{name} = {_show(value)} is outside the bounds of any model ({low} to {high})")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
