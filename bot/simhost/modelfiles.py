"""Model folders of the simulated host: the real config.json (shipped copies of shared/configs), a
model.safetensors.index.json whose total_size is the checkpoint's size, sparse shard files that add up to it
(apparent size only: no disk is used), and a tokenizer_config.json.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

CONFIG_DIR = Path(__file__).parent / "configs"
#: Drafter folders (DFlash, EAGLE-3, a standalone draft model): configs written from public sources (DRAFTERS.md).
DRAFTER_CONFIG_DIR = CONFIG_DIR / "drafters"

#: Checkpoint sizes (bytes) and shard counts known from real index files (configs/SIZES.md); other models are
#: estimated from their config.
KNOWN_CHECKPOINTS: dict[str, tuple[int, int]] = {
    "Qwen3.6-27B": (55_562_855_904, 15),
    "Llama-3.1-8B-Instruct": (16_060_522_496, 4),
}
SHARD_TARGET_BYTES = 5_000_000_000  # transformers' default max_shard_size "5GB"


def available_models() -> list[str]:
    return sorted(p.stem for d in (CONFIG_DIR, DRAFTER_CONFIG_DIR) for p in d.glob("*.json"))


def config_path(name: str) -> Path:
    target = CONFIG_DIR / f"{name}.json"
    return target if target.exists() else DRAFTER_CONFIG_DIR / f"{name}.json"


def _text(config: dict) -> dict:
    return config.get("text_config") or config


def _layer_types(text: dict) -> list[str]:
    layers = int(text.get("num_hidden_layers", 0))
    return list(text.get("layer_types") or ["full_attention"] * layers)


def estimate_parameters(config: dict) -> int:
    """A rough parameter count from config.json (norms and biases ignored): embeddings, attention (GQA, MLA or
    Gated-DeltaNet), MLP or MoE experts, MTP layers and a vision tower. Good to a few percent on the shipped
    configs (SIZES.md lists the computed figures it is checked against)."""
    text = _text(config)
    hidden = int(text["hidden_size"])
    vocab = int(text.get("vocab_size") or 262_208)  # gemma-3's config leaves it to Gemma3TextConfig's default
    heads = int(text.get("num_attention_heads", 1))
    kv_heads = int(text.get("num_key_value_heads") or heads)
    head_dim = int(text.get("head_dim") or hidden // heads)
    tied = bool(config.get("tie_word_embeddings", text.get("tie_word_embeddings", False)))

    if text.get("kv_lora_rank"):  # MLA (DeepSeek)
        q_rank, kv_rank = int(text.get("q_lora_rank") or 0), int(text["kv_lora_rank"])
        nope, rope, v_dim = int(text["qk_nope_head_dim"]), int(text["qk_rope_head_dim"]), int(text["v_head_dim"])
        q = hidden * q_rank + q_rank * heads * (nope + rope) if q_rank else hidden * heads * (nope + rope)
        full_attention = q + hidden * (kv_rank + rope) + kv_rank * heads * (nope + v_dim) + heads * v_dim * hidden
    else:
        gate = 2 if text.get("attn_output_gate") else 1
        full_attention = hidden * heads * head_dim * gate + 2 * hidden * kv_heads * head_dim + heads * head_dim * hidden
    k_heads, v_heads = int(text.get("linear_num_key_heads", 16)), int(text.get("linear_num_value_heads", 32))
    k_dim, v_dim_l = int(text.get("linear_key_head_dim", 128)), int(text.get("linear_value_head_dim", 128))
    linear_attention = (
        hidden * (2 * k_heads * k_dim + 2 * v_heads * v_dim_l) + hidden * 2 * v_heads + v_heads * v_dim_l * hidden
    )

    intermediate = int(text.get("intermediate_size", 4 * hidden))
    experts = int(text.get("num_experts") or text.get("n_routed_experts") or 0)
    if experts:
        moe_inter = int(text.get("moe_intermediate_size", intermediate))
        shared = int(text.get("n_shared_experts") or 0) * moe_inter + int(
            text.get("shared_expert_intermediate_size") or 0
        )
        moe_mlp = experts * 3 * hidden * moe_inter + 3 * hidden * shared + hidden * experts
    dense_layers = int(text.get("first_k_dense_replace", 0))

    dflash = config.get("dflash_config")
    eagle3 = any("eagle3" in str(a).lower() for a in config.get("architectures") or [])
    if isinstance(dflash, dict):
        # a DFlash drafter shares the target's embedding and LM head; it stores its decoder layers and an fc over
        # the concatenated target layers (z-lab's DFlashDraftModel: ``fc``, ``hidden_norm``)
        total = len(dflash.get("target_layer_ids") or []) * hidden * hidden
    elif eagle3:
        # an EAGLE-3 head: its own (reduced) LM head over draft_vocab_size, the embedding, an fc over 3 layers
        total = vocab * hidden + int(config.get("draft_vocab_size") or vocab) * hidden + 3 * hidden * hidden
    else:
        total = vocab * hidden * (1 if tied else 2)
    for i, kind in enumerate(_layer_types(text)):
        total += linear_attention if kind == "linear_attention" else full_attention
        total += moe_mlp if experts and i >= dense_layers else 3 * hidden * intermediate
    mtp_layers = int(text.get("mtp_num_hidden_layers") or text.get("num_nextn_predict_layers") or 0)
    total += mtp_layers * (full_attention + (moe_mlp if experts else 3 * hidden * intermediate) + 2 * hidden * hidden)
    vision = config.get("vision_config")
    if vision:
        v_hidden = int(vision.get("hidden_size", 1152))
        v_depth = int(vision.get("depth") or vision.get("num_hidden_layers") or 27)
        v_inter = int(vision.get("intermediate_size", 4 * v_hidden))
        total += v_depth * (4 * v_hidden * v_hidden + 2 * v_hidden * v_inter)
    return total


def checkpoint_bytes(name: str, config: dict) -> int:
    if name in KNOWN_CHECKPOINTS:
        return KNOWN_CHECKPOINTS[name][0]
    quant = config.get("quantization_config") or _text(config).get("quantization_config") or {}
    bytes_per_param = 1 if quant.get("quant_method") == "fp8" else 2
    return estimate_parameters(config) * bytes_per_param


def tensor_names(config: dict) -> list[str]:
    """Tensor names in checkpoint order, in the naming of the model's family (enough for a weight_map that
    shows which parts, e.g. MTP heads, the checkpoint has)."""
    text = _text(config)
    model_type = str(config.get("model_type", ""))
    prefix = {
        "qwen3_5": "model.language_model.",
        "qwen3_5_moe": "model.language_model.",
        "gemma3": "language_model.model.",
    }.get(model_type, "model.")
    experts = int(text.get("num_experts") or text.get("n_routed_experts") or 0)
    dense_layers = int(text.get("first_k_dense_replace", 0))
    mla = bool(text.get("kv_lora_rank"))

    def layer(p: str, kind: str, moe: bool) -> list[str]:
        names = [f"{p}input_layernorm.weight", f"{p}post_attention_layernorm.weight"]
        if kind == "linear_attention":
            names += [
                f"{p}linear_attn.{t}"
                for t in (
                    "in_proj_qkvz.weight",
                    "in_proj_ba.weight",
                    "conv1d.weight",
                    "A_log",
                    "dt_bias",
                    "norm.weight",
                    "out_proj.weight",
                )
            ]
        elif mla:
            names += [
                f"{p}self_attn.{t}.weight"
                for t in (
                    "q_a_proj",
                    "q_a_layernorm",
                    "q_b_proj",
                    "kv_a_proj_with_mqa",
                    "kv_a_layernorm",
                    "kv_b_proj",
                    "o_proj",
                )
            ]
        else:
            names += [f"{p}self_attn.{t}.weight" for t in ("q_proj", "k_proj", "v_proj", "o_proj")]
        if moe:
            names.append(f"{p}mlp.gate.weight")
            for e in range(experts):
                names += [f"{p}mlp.experts.{e}.{t}.weight" for t in ("gate_proj", "up_proj", "down_proj")]
        else:
            names += [f"{p}mlp.{t}.weight" for t in ("gate_proj", "up_proj", "down_proj")]
        return names

    names = [f"{prefix}embed_tokens.weight"]
    types = _layer_types(text)
    for i, kind in enumerate(types):
        names += layer(f"{prefix}layers.{i}.", kind, bool(experts) and i >= dense_layers)
    names.append(f"{prefix}norm.weight")
    if text.get("mtp_num_hidden_layers"):
        names += [
            "mtp.fc.weight",
            "mtp.norm.weight",
            "mtp.pre_fc_norm_embedding.weight",
            "mtp.pre_fc_norm_hidden.weight",
        ]
        for i in range(int(text["mtp_num_hidden_layers"])):
            names += layer(f"mtp.layers.{i}.", "full_attention", bool(experts))
    for i in range(int(text.get("num_nextn_predict_layers") or 0)):
        p = f"model.layers.{len(types) + i}."
        names += [f"{p}{t}.weight" for t in ("enorm", "hnorm", "eh_proj", "shared_head.norm", "shared_head.head")]
        names += layer(p, "full_attention", bool(experts))
    vision = config.get("vision_config")
    if vision:
        v_prefix = "vision_tower.vision_model.encoder.layers" if model_type == "gemma3" else "model.visual.blocks"
        for i in range(int(vision.get("depth") or vision.get("num_hidden_layers") or 27)):
            names += [f"{v_prefix}.{i}.{t}.weight" for t in ("attn.qkv", "attn.proj", "mlp.fc1", "mlp.fc2")]
    if not bool(config.get("tie_word_embeddings", text.get("tie_word_embeddings", False))):
        names.append("lm_head.weight")
    return names


def tokenizer_config(config: dict) -> dict:
    text = _text(config)
    model_type = str(config.get("model_type", ""))
    tokenizer_class = {
        "llama": "PreTrainedTokenizerFast",
        "mistral": "LlamaTokenizer",
        "gemma3": "GemmaTokenizer",
        "deepseek_v3": "LlamaTokenizerFast",
    }.get(model_type, "Qwen2Tokenizer")
    return {
        "add_bos_token": model_type in ("llama", "mistral", "gemma3", "deepseek_v3"),
        "clean_up_tokenization_spaces": False,
        "model_max_length": int(text.get("max_position_embeddings") or 131072),
        "tokenizer_class": tokenizer_class,
        "chat_template": (
            "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
            "'<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
        ),
    }


def write_model_folder(models_dir: Path, name: str) -> Path:
    """Create models_dir/name: config.json byte for byte, the index, sparse shards, tokenizer_config.json."""
    source = config_path(name)
    folder = models_dir / name
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, folder / "config.json")
    config = json.loads(source.read_text())

    total = checkpoint_bytes(name, config)
    shard_count = (
        KNOWN_CHECKPOINTS[name][1] if name in KNOWN_CHECKPOINTS else max(1, math.ceil(total / SHARD_TARGET_BYTES))
    )
    shard_names = [f"model-{i:05d}-of-{shard_count:05d}.safetensors" for i in range(1, shard_count + 1)]
    names = tensor_names(config)
    weight_map = {tensor: shard_names[i * shard_count // len(names)] for i, tensor in enumerate(names)}
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")

    base, remainder = divmod(total, shard_count)
    for i, shard in enumerate(shard_names):
        with open(folder / shard, "wb") as handle:
            handle.truncate(base + (remainder if i == shard_count - 1 else 0))  # sparse: apparent size only
    (folder / "tokenizer_config.json").write_text(json.dumps(tokenizer_config(config), indent=2) + "\n")
    return folder
