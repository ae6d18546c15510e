"""ModelSpec: the shape of a model, read from its real config.json.

Only structure lives here (layers, heads, experts, attention kinds, towers, MTP layers, native quantization and the
parameter counts that follow from them). Bytes and GPU budgets are memory.py's job.

Configs in the wild are uneven: multimodal models nest the language model under ``text_config`` (with some keys left
at the top level), hub files omit keys whose transformers default applies, and MTP keys are often dropped by
re-publishers. So every lookup goes text_config -> top level -> the model type's transformers default, and a key
that is simply absent stays ``None`` ("unknown") rather than being read as "no".
"""

from __future__ import annotations

import math
from typing import Any

from planners.config_bounds import ConfigBoundsError, check_config
from planners.config_lookup import (DTYPE_BYTES, MTP_STORES_EMBEDDINGS_TYPES, NON_GATED_MLP_TYPES, QKV_BIAS_TYPES,
                                     Lookup)
from planners.model_types import AttentionKind, Frozen, ModelSpec, ParamCounts, Quantization, VisionTower

__all__ = ["AttentionKind", "ConfigError", "Frozen", "ModelSpec", "ParamCounts", "Quantization", "VisionTower",
           "model_spec", "round_down", "ceil_div"]


# ---------------------------------------------------------------------------------------------- reading


class ConfigError(ValueError):
    """config.json lacks what any transformer config has (hidden size, layers, heads)."""


def _dtype(look: Lookup) -> tuple[str, int]:
    name = str(look.get("torch_dtype", "dtype", default="bfloat16")).removeprefix("torch.")
    return name, DTYPE_BYTES.get(name, 2)


def _layer_kinds(look: Lookup, num_layers: int, model_type: str | None) -> tuple[list[AttentionKind], int | None]:
    window = look.int("sliding_window")
    layer_types = look.get("layer_types")
    if isinstance(layer_types, list) and len(layer_types) == num_layers:
        kinds: list[AttentionKind] = []
        for item in layer_types:
            text = str(item).lower()
            if "linear" in text or "mamba" in text or "delta" in text:
                kinds.append("linear")
            elif "sliding" in text or "local" in text or "chunk" in text:
                kinds.append("sliding")
            else:
                kinds.append("full")
        return kinds, window
    interval = look.int("full_attention_interval")
    if interval and look.has("linear_num_value_heads"):
        # Qwen3-Next style: every `interval`-th layer is full attention, the rest Gated DeltaNet
        return ["full" if (i + 1) % interval == 0 else "linear" for i in range(num_layers)], window
    pattern = look.int("sliding_window_pattern")
    if window and pattern:
        # Gemma 2/3: `pattern - 1` local layers, then one global
        return ["full" if (i + 1) % pattern == 0 else "sliding" for i in range(num_layers)], window
    if window and look.get("use_sliding_window") is not False and (model_type or "") not in {"qwen2", "qwen3"}:
        return ["sliding"] * num_layers, window
    return ["full"] * num_layers, None


def _quantization(look: Lookup) -> Quantization | None:
    qc = look.get("quantization_config")
    if not isinstance(qc, dict):
        return None
    method = str(qc.get("quant_method") or qc.get("quant_algo") or "unknown").lower()
    bits: float | None = qc.get("bits") or qc.get("w_bit")
    group = qc.get("group_size") or qc.get("q_group_size")
    block = qc.get("weight_block_size")
    is_fp8 = False
    if method in {"fp8", "fbgemm_fp8", "w8a8_fp8"} or str(qc.get("fmt", "")).startswith("e4m3"):
        bits, is_fp8 = 8, True
    elif method == "compressed-tensors":
        groups = qc.get("config_groups") or {}
        weights = next((g.get("weights") for g in groups.values() if isinstance(g, dict) and g.get("weights")), {})
        bits = weights.get("num_bits", 8)
        group = weights.get("group_size")
        is_fp8 = weights.get("type") == "float" and bits == 8
    elif method == "modelopt":
        algo = str(qc.get("quant_algo", "")).upper()
        bits, is_fp8 = (8, True) if "FP8" in algo else (4, False)
        group = qc.get("group_size") or (16 if "NVFP4" in algo else None)
    elif method == "mxfp4":
        bits, group = 4, 32
    elif method == "bitsandbytes":
        bits = 4 if qc.get("load_in_4bit") else 8
    block_size = (int(block[0]), int(block[1])) if isinstance(block, list) and len(block) == 2 else None
    return Quantization(
        method=method,
        bits=float(bits) if bits is not None else None,
        group_size=int(group) if group and int(group) > 0 else None,
        block_size=block_size,
        is_fp8=is_fp8,
    )


def _vision(config: dict[str, Any], text_hidden: int) -> VisionTower | None:
    vc = config.get("vision_config")
    if not isinstance(vc, dict):
        return None
    layers = int(vc.get("depth") or vc.get("num_hidden_layers") or 24)
    hidden = int(vc.get("hidden_size") or vc.get("embed_dim") or 1024)
    inter = int(vc.get("intermediate_size") or 4 * hidden)
    gated = str(vc.get("hidden_act", "")).lower() == "silu"
    block = 4 * hidden * hidden + 4 * hidden + (3 if gated else 2) * hidden * inter + inter + hidden + 4 * hidden
    patch = int(vc.get("patch_size") or 14)
    patch_embed = int(vc.get("in_channels") or 3) * int(vc.get("temporal_patch_size") or 1) * patch * patch * hidden
    if vc.get("num_position_embeddings"):
        positions = int(vc["num_position_embeddings"])
    elif vc.get("image_size"):
        positions = (int(vc["image_size"]) // patch) ** 2
    else:
        positions = 0
    out = int(vc.get("out_hidden_size") or text_hidden)
    merge = int(vc.get("spatial_merge_size") or 1)
    if merge > 1:  # Qwen-VL merger: LayerNorm, Linear(h*m^2 -> h*m^2), Linear(h*m^2 -> out)
        merged = hidden * merge * merge
        projector = 2 * hidden + merged * merged + merged + merged * out + out
    else:  # a single projection into the language model (Gemma 3, LLaVA-style first layer)
        projector = hidden * out + hidden
    params = layers * block + patch_embed + positions * hidden + projector
    return VisionTower(layers=layers, hidden_size=hidden, intermediate_size=inter, params=params)


def model_spec(config: dict[str, Any]) -> ModelSpec:
    """Read a real config.json (as a dict). Raises ConfigError when the basic dimensions are missing, when a
    number is outside the bounds of any model (planners/config_bounds.py), or when a value has the wrong type."""
    if not isinstance(config, dict):
        raise ConfigError("config.json must be a JSON object")
    try:
        check_config(config)  # before any number is used: per-layer lists are built from these
        return _model_spec(config)
    except ConfigBoundsError as exc:
        raise ConfigError(str(exc)) from None
    except ConfigError:
        raise
    except (TypeError, ValueError, AttributeError, ZeroDivisionError, OverflowError) as exc:
        # A value of the wrong kind where the planner needs another (a number for model_type, a string for a
        # list): said as a config problem, never an internal error.
        detail = exc.errors()[0] if hasattr(exc, "errors") else exc
        raise ConfigError(f"config.json is not a usable model config: {_short(detail)}") from None


def _short(detail: object) -> str:
    if isinstance(detail, dict):
        where = ".".join(str(part) for part in detail.get("loc", ()))
        return f"{where}: {detail.get('msg')} (got {str(detail.get('input'))[:60]})"
    return str(detail)[:200]


def _model_spec(config: dict[str, Any]) -> ModelSpec:
    look = Lookup(config)
    hidden = look.int("hidden_size", "d_model", "n_embd")
    layers = look.int("num_hidden_layers", "num_layers", "n_layer")
    heads = look.int("num_attention_heads", "n_head", "num_heads")
    if not hidden or not layers or not heads:
        missing = [
            n
            for n, v in (("hidden_size", hidden), ("num_hidden_layers", layers), ("num_attention_heads", heads))
            if not v
        ]
        raise ConfigError(f"config.json has no {', '.join(missing)} (looked in text_config and at the top level)")
    model_type = config.get("model_type")
    text_type = look.text.get("model_type") or model_type
    kv_heads = look.int("num_key_value_heads", "num_kv_heads", default=heads) or heads
    head_dim = look.int("head_dim", default=hidden // heads) or hidden // heads
    vocab = look.int("vocab_size", default=32_000) or 32_000
    inter = look.int("intermediate_size", "ffn_dim", default=4 * hidden) or 4 * hidden
    tie = bool(look.get("tie_word_embeddings", default=False))
    dtype, dtype_bytes = _dtype(look)
    kinds, window = _layer_kinds(look, layers, text_type)

    moe, moe_flags = _moe_fields(look, layers, inter)
    mtp_layers = look.int("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_layers")
    stores_embeddings = (text_type or "") in MTP_STORES_EMBEDDINGS_TYPES or bool(
        look.get("mtp_use_dedicated_embeddings", default=False)
    )

    fields: dict[str, Any] = dict(
        architectures=list(config.get("architectures") or look.text.get("architectures") or []),
        model_type=model_type,
        text_model_type=text_type,
        dtype=dtype,
        dtype_bytes=dtype_bytes,
        hidden_size=hidden,
        num_layers=layers,
        num_attention_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=inter,
        vocab_size=vocab,
        tie_word_embeddings=tie,
        max_position_embeddings=look.int("max_position_embeddings", "max_sequence_length", "seq_length"),
        layer_kinds=kinds,
        sliding_window=window if "sliding" in kinds else None,
        attn_output_gate=bool(look.get("attn_output_gate", default=False)),
        **_mla_fields(look),
        **moe,
        **_linear_fields(look, kinds),
        vision=_vision(config, hidden),
        mtp_layers=mtp_layers,
        mtp_stores_embeddings=stores_embeddings,
        quantization=_quantization(look),
        has_auto_map=bool(config.get("auto_map") or look.text.get("auto_map")),
        transformers_version=config.get("transformers_version"),
    )
    fields["params"] = _count_params(fields, look, moe_flags)
    return ModelSpec(**fields)


def _mla_fields(look: Lookup) -> dict[str, Any]:
    """Multi-head latent attention's ranks and head sizes (DeepSeek-style), all None for a model without MLA."""
    rank = look.int("kv_lora_rank")
    names = ("q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
    return {"kv_lora_rank": rank} | {name: look.int(name) if rank else None for name in names}


def _moe_fields(look: Lookup, layers: int, inter: int) -> tuple[dict[str, Any], list[bool]]:
    """The experts' counts and sizes, and which layers hold experts (a dense model: no experts, all False)."""
    num_experts = look.int("num_experts", "n_routed_experts", "num_local_experts", default=0) or 0
    top_k = look.int("num_experts_per_tok", "moe_topk", "num_experts_per_token")
    moe_inter = look.int("moe_intermediate_size", default=inter if num_experts else None)
    moe_flags = _moe_layers(look, layers, num_experts)
    return {
        "num_experts": num_experts,
        "experts_per_token": top_k if num_experts else None,
        "moe_intermediate_size": moe_inter if num_experts else None,
        "num_shared_experts": look.int("n_shared_experts", "num_shared_experts", default=0) or 0,
        "shared_expert_intermediate_size": look.int("shared_expert_intermediate_size"),
        "moe_layers": sum(moe_flags),
    }, moe_flags


def _linear_fields(look: Lookup, kinds: list[AttentionKind]) -> dict[str, Any]:
    """Linear-attention (Gated DeltaNet / Mamba-style) layer sizes, all None for a model with none of those layers."""
    linear = "linear" in kinds
    names = ("linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
             "linear_conv_kernel_dim")
    return {name: look.int(name) if linear else None for name in names} | {
        "mamba_ssm_dtype": look.get("mamba_ssm_dtype") if linear else None}


def _moe_layers(look: Lookup, layers: int, num_experts: int) -> list[bool]:
    if not num_experts:
        return [False] * layers
    dense_first = look.int("first_k_dense_replace", default=0) or 0
    freq = look.int("moe_layer_freq", default=1) or 1
    sparse_step = look.int("decoder_sparse_step", default=1) or 1
    mlp_only = set(look.get("mlp_only_layers", default=[]) or [])
    return [
        i >= dense_first and i % freq == 0 and (i + 1) % sparse_step == 0 and i not in mlp_only for i in range(layers)
    ]


# ---------------------------------------------------------------------------------------------- counting


def _attention_params(f: dict[str, Any], kind: AttentionKind, look: Lookup) -> int:
    h, heads, kv, hd = f["hidden_size"], f["num_attention_heads"], f["num_kv_heads"], f["head_dim"]
    if kind == "linear":
        nk, nv = f["linear_num_key_heads"] or 0, f["linear_num_value_heads"] or 0
        dk, dv = f["linear_key_head_dim"] or 0, f["linear_value_head_dim"] or 0
        key_dim, value_dim = nk * dk, nv * dv
        conv_dim = 2 * key_dim + value_dim
        return (
            h * (2 * key_dim + 2 * value_dim)  # in_proj q, k, v, z (output gate)
            + h * 2 * nv  # in_proj b, a
            + conv_dim * (f["linear_conv_kernel_dim"] or 4)  # depthwise conv
            + 2 * nv  # dt_bias, A_log
            + dv  # gated RMSNorm
            + value_dim * h  # out_proj
        )
    if f["kv_lora_rank"]:
        rope, nope, vdim = f["qk_rope_head_dim"] or 0, f["qk_nope_head_dim"] or 0, f["v_head_dim"] or hd
        q_rank, kv_rank = f["q_lora_rank"], f["kv_lora_rank"]
        q = (h * q_rank + q_rank + q_rank * heads * (nope + rope)) if q_rank else h * heads * (nope + rope)
        return q + h * (kv_rank + rope) + kv_rank + kv_rank * heads * (nope + vdim) + heads * vdim * h
    q_out = heads * hd * (2 if f["attn_output_gate"] else 1)
    params = h * q_out + 2 * h * kv * hd + heads * hd * h
    if look.get("attention_bias", default=False) or (f["text_model_type"] or "") in QKV_BIAS_TYPES:
        params += q_out + 2 * kv * hd
    if look.get("qk_norm", default=None) or (f["text_model_type"] or "").startswith(("qwen3", "gemma3")):
        params += 2 * hd  # per-head q/k RMSNorm
    return params


def _mlp_params(h: int, inter: int, gated: bool) -> int:
    return (3 if gated else 2) * h * inter


def _count_params(f: dict[str, Any], look: Lookup, moe_flags: list[bool]) -> ParamCounts:
    h, vocab, inter = f["hidden_size"], f["vocab_size"], f["intermediate_size"]
    gated = (f["text_model_type"] or "") not in NON_GATED_MLP_TYPES
    attention = sum(_attention_params(f, kind, look) for kind in f["layer_kinds"])
    dense_layers = moe_flags.count(False)
    mlp_dense = dense_layers * _mlp_params(h, inter, gated)
    moe_experts = moe_shared = router = 0
    if f["num_experts"]:
        moe_inter = f["moe_intermediate_size"] or inter
        per_layer_shared = f["num_shared_experts"] * _mlp_params(h, moe_inter, gated)
        if f["shared_expert_intermediate_size"]:
            per_layer_shared += _mlp_params(h, f["shared_expert_intermediate_size"], gated) + h  # + shared gate
        n_moe = moe_flags.count(True)
        moe_experts = n_moe * f["num_experts"] * _mlp_params(h, moe_inter, gated)
        moe_shared = n_moe * per_layer_shared
        bias = f["num_experts"] if look.get("topk_method") == "noaux_tc" else 0  # e_score_correction_bias
        router = n_moe * (h * f["num_experts"] + bias)
    norms = f["num_layers"] * 2 * h + h
    embedding = vocab * h
    lm_head = 0 if f["tie_word_embeddings"] else vocab * h
    quantizable = attention + mlp_dense + moe_experts + moe_shared

    mtp = 0
    if f["mtp_layers"]:
        # one decoder layer (full attention; the MLP kind of the model's last layer) + eh_proj(2h -> h) + 3 norms
        last_is_moe = bool(moe_flags and moe_flags[-1])
        layer_mlp = (
            f["num_experts"] * _mlp_params(h, f["moe_intermediate_size"] or inter, gated)
            + (moe_shared + router) // max(1, moe_flags.count(True))
            if last_is_moe
            else _mlp_params(h, inter, gated)
        )
        layer_attention = _attention_params(f, "full", look)
        per_layer = layer_attention + layer_mlp + 2 * h * h + 5 * h
        if f["mtp_stores_embeddings"]:
            per_layer += 2 * vocab * h
        mtp = f["mtp_layers"] * per_layer
        quantizable += f["mtp_layers"] * (layer_attention + layer_mlp)
    vision = f["vision"].params if f["vision"] is not None else 0
    return ParamCounts(
        embedding=embedding,
        lm_head=lm_head,
        attention=attention,
        mlp_dense=mlp_dense,
        moe_experts=moe_experts,
        moe_shared=moe_shared,
        router=router,
        norms=norms,
        vision=vision,
        mtp=mtp,
        quantizable=quantizable,
    )


def round_down(value: int, multiple: int) -> int:
    return (value // multiple) * multiple if value > 0 else 0


def ceil_div(a: int, b: int) -> int:
    return math.ceil(a / b)
