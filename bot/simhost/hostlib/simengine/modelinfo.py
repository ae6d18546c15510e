"""What a fake engine needs to know about the model folder it was pointed at, read the way engines read it:
config.json (nested `text_config` for multimodal models), model.safetensors.index.json and the shard files."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from simengine.errors import HFValidationError

GIB = 1 << 30


@dataclass(frozen=True)
class ModelFacts:
    path: Path
    architecture: str
    model_type: str
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    full_attention_layers: int
    hybrid_linear: bool  # Gated-DeltaNet / Mamba layers next to full attention (Qwen3-Next, Qwen3.5/3.6)
    mla_latent_dim: int | None  # kv_lora_rank + qk_rope_head_dim for MLA models (DeepSeek)
    max_position_embeddings: int
    multimodal: bool
    mtp_layers: int
    checkpoint_bytes: int
    shard_count: int
    fp8_checkpoint: bool
    gdn_state_per_request_bytes: int  # conv + SSM state of all linear-attention layers, whole model, bf16/fp32 mix

    def kv_bytes_per_token(self, tp: int, dtype_bytes: int = 2) -> int:
        """Per-GPU KV bytes per token (MEMORY_MODEL.md §3): MLA's latent is not split across ranks; GQA heads are,
        but never below one head per rank."""
        if self.mla_latent_dim is not None:
            return self.mla_latent_dim * self.full_attention_layers * dtype_bytes
        heads_per_rank = max(1, self.num_kv_heads // tp)
        return 2 * self.full_attention_layers * heads_per_rank * self.head_dim * dtype_bytes


def _text_config(config: dict) -> dict:
    return config.get("text_config") or config


def read_model(path: str) -> ModelFacts:
    folder = Path(path)
    config_file = folder / "config.json"
    if not folder.is_dir():
        # A path that is not a local folder is taken as a hub repo id; the hub's validator rejects absolute paths.
        raise HFValidationError(
            "Repo id must be in the form 'repo_name' or "
            f"'namespace/repo_name': '{path}'. Use `repo_type` argument if needed."
        )
    if not config_file.is_file():
        raise OSError(f"{path} does not appear to have a file named config.json.")
    config = json.loads(config_file.read_text())
    text = _text_config(config)

    layers = int(text.get("num_hidden_layers", 0))
    layer_types = text.get("layer_types") or []
    full_layers = sum(1 for t in layer_types if t == "full_attention") if layer_types else layers
    heads = int(text.get("num_attention_heads", 1))
    kv_heads = int(text.get("num_key_value_heads") or heads)
    head_dim = int(text.get("head_dim") or int(text.get("hidden_size", 0)) // max(heads, 1))
    mla = None
    if text.get("kv_lora_rank"):
        mla = int(text["kv_lora_rank"]) + int(text.get("qk_rope_head_dim", 0))

    index_file = folder / "model.safetensors.index.json"
    total = 0
    shards: set[str] = set()
    if index_file.is_file():
        index = json.loads(index_file.read_text())
        total = int(index.get("metadata", {}).get("total_size", 0))
        shards = set(index.get("weight_map", {}).values())
        missing = sorted(s for s in shards if not (folder / s).is_file())
        if missing:
            raise FileNotFoundError(2, "No such file or directory", str(folder / missing[0]))
    else:
        files = sorted(folder.glob("*.safetensors"))
        shards = {f.name for f in files}
        total = sum(f.stat().st_size for f in files)
    if not shards:
        raise RuntimeError(f"Cannot find any model weights with `{path}`")

    gdn_layers = sum(1 for t in layer_types if t == "linear_attention")
    gdn_state = 0
    if gdn_layers:
        k_heads, v_heads = int(text.get("linear_num_key_heads", 16)), int(text.get("linear_num_value_heads", 32))
        k_dim, v_dim = int(text.get("linear_key_head_dim", 128)), int(text.get("linear_value_head_dim", 128))
        kernel = int(text.get("linear_conv_kernel_dim", 4))
        ssm = v_heads * k_dim * v_dim * 4  # float32 SSM state (the default mamba_ssm_dtype)
        conv = (2 * k_heads * k_dim + v_heads * v_dim) * (kernel - 1) * 2
        gdn_state = gdn_layers * (ssm + conv)

    quant = config.get("quantization_config") or text.get("quantization_config") or {}
    return ModelFacts(
        path=folder,
        architecture=(config.get("architectures") or ["?"])[0],
        model_type=str(config.get("model_type", "")),
        num_attention_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        full_attention_layers=full_layers,
        hybrid_linear=any(t != "full_attention" for t in layer_types) and "linear_attention" in layer_types,
        mla_latent_dim=mla,
        max_position_embeddings=int(
            text.get("max_position_embeddings") or config.get("max_position_embeddings") or 131072
        ),
        multimodal="vision_config" in config,
        mtp_layers=int(text.get("mtp_num_hidden_layers") or text.get("num_nextn_predict_layers") or 0),
        checkpoint_bytes=total,
        shard_count=len(shards),
        fp8_checkpoint=quant.get("quant_method") == "fp8",
        gdn_state_per_request_bytes=gdn_state,
    )
