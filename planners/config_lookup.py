"""How the planner reads a config.json: text_config first, then the top level, then the model type's transformers
default (planners/model.py builds the ModelSpec from these lookups), and the per-model-type facts a config does not
say (which MLPs are ungated, which attention projections carry biases, which MTP layers hold their own embeddings)."""

from __future__ import annotations

from typing import Any


#: Where the language model's config sits in multimodal configs, by the keys real models use.
TEXT_CONFIG_KEYS = ("text_config", "llm_config", "language_config", "thinker_config")

#: transformers defaults for keys that hub config files commonly omit. Only what the planner reads; sources are the
#: model types' configuration classes (e.g. Gemma3TextConfig: vocab_size 262208, tied embeddings, 1 global layer in 6).
MODEL_TYPE_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma3_text": {
        "vocab_size": 262_208,
        "tie_word_embeddings": True,
        "max_position_embeddings": 131_072,
        "sliding_window_pattern": 6,
        "hidden_activation": "gelu_pytorch_tanh",
    },
    "gemma2": {"tie_word_embeddings": True, "sliding_window_pattern": 2},
    "gemma": {"tie_word_embeddings": True},
    "llama": {"tie_word_embeddings": False},
    "mistral": {"tie_word_embeddings": False},
    "qwen2": {"tie_word_embeddings": False},
    "qwen3": {"tie_word_embeddings": False},
    "qwen3_moe": {"tie_word_embeddings": False, "decoder_sparse_step": 1},
    "qwen3_5_text": {"tie_word_embeddings": False},
    "deepseek_v3": {"tie_word_embeddings": False, "moe_layer_freq": 1, "first_k_dense_replace": 0},
}

#: Model types whose MLP is a plain two-matrix (up, down) block rather than a gated three-matrix one.
NON_GATED_MLP_TYPES = frozenset({"gpt2", "gpt_neox", "gptj", "opt", "bloom", "falcon", "phi", "starcoder2", "mpt"})

#: Model types whose attention projections carry biases even though their config has no attention_bias key.
QKV_BIAS_TYPES = frozenset({"qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl"})

#: Model types whose checkpoints store the MTP module's own copy of the embedding and output head
#: (DeepSeek-V3's layer 61 holds ``embed_tokens`` and ``shared_head.head``: 685B = 671B main + 14B MTP).
MTP_STORES_EMBEDDINGS_TYPES = frozenset({"deepseek_v3", "deepseek_v32", "deepseek_v2"})

DTYPE_BYTES = {
    "float32": 4,
    "float": 4,
    "fp32": 4,
    "bfloat16": 2,
    "bf16": 2,
    "float16": 2,
    "fp16": 2,
    "half": 2,
    "float8_e4m3fn": 1,
    "fp8": 1,
}




class Lookup:
    """text_config -> top level -> transformers default for the model type."""

    def __init__(self, config: dict[str, Any]):
        self.top = config
        self.text = next((config[k] for k in TEXT_CONFIG_KEYS if isinstance(config.get(k), dict)), config)
        text_type = self.text.get("model_type")
        self.defaults = MODEL_TYPE_DEFAULTS.get(text_type or "", {}) or MODEL_TYPE_DEFAULTS.get(
            config.get("model_type") or "", {}
        )

    def get(self, *keys: str, default: Any = None) -> Any:
        for key in keys:
            if self.text.get(key) is not None:
                return self.text[key]
        for key in keys:
            if self.top.get(key) is not None:
                return self.top[key]
        for key in keys:
            if key in self.defaults:
                return self.defaults[key]
        return default

    def has(self, key: str) -> bool:
        return key in self.text or key in self.top

    def int(self, *keys: str, default: int | None = None) -> int | None:
        value = self.get(*keys)
        return int(value) if value is not None else default
