"""The values a model's config.json is read into (planners/model.py reads them): ModelSpec and its parts."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

AttentionKind = Literal["full", "sliding", "linear"]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Quantization(Frozen):
    """The checkpoint's own quantization (``quantization_config``), as bytes per quantized linear weight."""

    method: str
    bits: float | None = None  # of a quantized weight element
    group_size: int | None = None
    block_size: tuple[int, int] | None = None  # fp8 block scaling (DeepSeek: 128x128)
    is_fp8: bool = False

    @property
    def bytes_per_weight(self) -> float:
        """Stored bytes per quantized weight element, scales and zero points included."""
        if self.bits is None:
            return 2.0
        value = self.bits / 8
        if self.group_size:
            # one fp16 scale (+ a packed zero point) per group
            value += (2 + self.bits / 8) / self.group_size
        if self.block_size:
            value += 4 / (self.block_size[0] * self.block_size[1])  # fp32 scale per block
        return value


class VisionTower(Frozen):
    layers: int
    hidden_size: int
    intermediate_size: int
    params: int  # estimated: encoder blocks + patch/position embeddings + projector into the language model


class ParamCounts(Frozen):
    """Parameter counts computed from the config (norms and biases included where the config says so)."""

    embedding: int
    lm_head: int  # 0 when tied to the embedding
    attention: int  # all decoder layers, every kind of attention
    mlp_dense: int
    moe_experts: int  # routed experts, all layers
    moe_shared: int  # shared experts and their gates
    router: int
    norms: int
    vision: int
    mtp: int  # MTP module(s), as stored in the checkpoint
    #: Weights in linear layers of the decoder (attention, MLPs, experts, MTP): what FP8/INT4 quantization packs.
    quantizable: int

    @property
    def text(self) -> int:
        return (
            self.embedding
            + self.lm_head
            + self.attention
            + self.mlp_dense
            + self.moe_experts
            + self.moe_shared
            + self.router
            + self.norms
        )

    @property
    def total(self) -> int:
        return self.text + self.vision + self.mtp


class ModelSpec(Frozen):
    architectures: list[str]
    model_type: str | None
    text_model_type: str | None
    dtype: str  # the checkpoint's dtype name ("bfloat16")
    dtype_bytes: int
    hidden_size: int
    num_layers: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_word_embeddings: bool
    max_position_embeddings: int | None
    #: Attention kind of every decoder layer, in order.
    layer_kinds: list[AttentionKind]
    sliding_window: int | None = None
    attn_output_gate: bool = False
    # MLA (DeepSeek-V2/V3 style)
    kv_lora_rank: int | None = None
    q_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    qk_nope_head_dim: int | None = None
    v_head_dim: int | None = None
    # MoE
    num_experts: int = 0
    experts_per_token: int | None = None
    moe_intermediate_size: int | None = None
    num_shared_experts: int = 0
    shared_expert_intermediate_size: int | None = None
    moe_layers: int = 0
    # hybrid linear attention (Gated DeltaNet)
    linear_num_key_heads: int | None = None
    linear_num_value_heads: int | None = None
    linear_key_head_dim: int | None = None
    linear_value_head_dim: int | None = None
    linear_conv_kernel_dim: int | None = None
    mamba_ssm_dtype: str | None = None
    # towers and heads
    vision: VisionTower | None = None
    #: MTP layers in the checkpoint; None = the config does not say (unknown, not "none").
    mtp_layers: int | None = None
    mtp_stores_embeddings: bool = False
    quantization: Quantization | None = None
    #: config.json names custom code (auto_map): engines need --trust-remote-code to import it.
    has_auto_map: bool = False
    transformers_version: str | None = None
    params: ParamCounts

    # ------------------------------------------------------------------ derived figures

    @property
    def architecture(self) -> str:
        return self.architectures[0] if self.architectures else (self.model_type or "unknown")

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def is_hybrid_linear(self) -> bool:
        return "linear" in self.layer_kinds

    @property
    def is_multimodal(self) -> bool:
        return self.vision is not None

    @property
    def full_attention_layers(self) -> int:
        return self.layer_kinds.count("full")

    @property
    def sliding_attention_layers(self) -> int:
        return self.layer_kinds.count("sliding")

    @property
    def linear_attention_layers(self) -> int:
        return self.layer_kinds.count("linear")

    @property
    def active_params(self) -> int:
        """Parameters used per token (MoE: top-k routed experts + shared), without vision and MTP."""
        p = self.params
        if not self.is_moe or not self.experts_per_token:
            return p.text
        routed_active = p.moe_experts * self.experts_per_token // self.num_experts
        return p.text - p.moe_experts + routed_active

    @property
    def mtp_params_per_layer(self) -> int:
        if not self.mtp_layers:
            return 0
        return self.params.mtp // self.mtp_layers
