"""GPU memory model: weight bytes, KV bytes per token, fixed per-request state, and the budget per GPU.

Each engine splits a GPU its own way (its package's memory.py: SGLang's static fraction, vLLM's utilization with
its profiled overhead); what is left for KV and per-request state is counted here the same way for every engine.

All figures are per GPU at a given TP. They are estimates made before launch: the engine's own log line
("GPU KV cache size: N tokens", "max_total_num_tokens=N") is the truth once it runs.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from bot.models import GIB, ModelFolder

from .engines import registry
from .model import ModelSpec

MIB = 1 << 20
GB = 1_000_000_000

#: Above this disagreement between two sources of the weight size, the planner says so.
WEIGHT_DISAGREEMENT = 0.05

#: A registered engine's name (planners/engines/registry.py).
EngineKind = str


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def gib(value: float) -> str:
    return f"{value / GIB:.1f} GiB"


# ---------------------------------------------------------------------------------------------- weights


def params_bytes(spec: ModelSpec) -> int:
    """Checkpoint bytes implied by the config: quantized linear weights at their packed size, the rest at dtype."""
    p = spec.params
    if spec.quantization and spec.quantization.bits is not None:
        packed = p.quantizable * spec.quantization.bytes_per_weight
        return int(packed + (p.total - p.quantizable) * spec.dtype_bytes)
    return p.total * spec.dtype_bytes


def weight_bytes(spec: ModelSpec, folder: ModelFolder | None) -> tuple[int, list[str]]:
    """Bytes of the checkpoint: index total_size, else the shard files' sizes, else parameters x dtype bytes.

    Returns the bytes and notes naming the source used, with a warning when two sources disagree by more than 5%.
    """
    estimate = params_bytes(spec)
    estimate_text = f"{estimate / GB:.2f} GB from {spec.params.total / 1e9:.2f} B parameters in config.json"
    notes: list[str] = []
    index = folder.index_total_size if folder else None
    shards = folder.shard_bytes if folder else 0
    if index is not None and index <= 0:
        notes.append("model.safetensors.index.json has total_size 0 (a stub); not used")
        index = None
    from_checkpoint = True
    if index:
        value, source = index, f"safetensors index total_size {index / GB:.2f} GB"
        if shards and abs(shards - index) / index > WEIGHT_DISAGREEMENT:
            notes.append(
                f"warning: shard files add up to {shards / GB:.2f} GB but the index says {index / GB:.2f} GB "
                f"({abs(shards - index) / index:.0%} apart): a shard may be missing or partly downloaded"
            )
    elif shards:
        value, source = shards, f"sum of {folder.shard_count if folder else 0} safetensors shards {shards / GB:.2f} GB"
    else:
        value, source, from_checkpoint = estimate, estimate_text, False
    notes.insert(0, f"weights: {source}")
    if from_checkpoint and estimate and abs(value - estimate) / estimate > WEIGHT_DISAGREEMENT:
        notes.append(
            f"warning: the checkpoint ({value / GB:.2f} GB) and the config ({estimate_text}) disagree by "
            f"{abs(value - estimate) / estimate:.0%}; using the checkpoint's figure"
        )
    return value, notes


def loaded_weight_bytes(
    spec: ModelSpec, checkpoint_bytes: int, *, mtp_enabled: bool, online_fp8: bool = False
) -> tuple[int, list[str]]:
    """What the engine puts on the GPUs (all ranks together) from a checkpoint of ``checkpoint_bytes``."""
    notes: list[str] = []
    value = float(checkpoint_bytes)
    total = max(1, spec.params.total)
    if spec.dtype_bytes == 4 and not spec.quantization:
        value /= 2
        notes.append("the checkpoint is float32; engines serve it in 16-bit, half its size")
    if spec.mtp_layers and not mtp_enabled:
        mtp_share = value * spec.params.mtp / total
        value -= mtp_share
        notes.append(f"the MTP head ({gib(mtp_share)}) is not loaded without speculative decoding")
    if online_fp8 and not spec.quantization:
        saved = value * spec.params.quantizable / total / 2
        value -= saved
        notes.append(f"online FP8 quantization stores the linear layers in 1 byte: saves {gib(saved)}")
    return int(value), notes


def linear_note(spec: ModelSpec, base: int) -> str:
    """The plan's sentence on a hybrid model's recurrent state."""
    return (
        f"{spec.linear_attention_layers} of {spec.num_layers} layers are linear attention (Gated DeltaNet): "
        f"{base / MIB:.0f} MiB of recurrent state per request per GPU"
    )


def replicated_extra_bytes(spec: ModelSpec, tp: int, bytes_per_param: float) -> int:
    """Per-GPU bytes beyond weights/TP: K/V projections are replicated when there are fewer KV heads than ranks."""
    if spec.is_mla or spec.num_kv_heads >= tp:
        return 0
    kv_proj = 2 * spec.hidden_size * spec.num_kv_heads * spec.head_dim * spec.full_attention_layers
    per_rank_share = kv_proj / tp
    per_rank_real = kv_proj / spec.num_kv_heads  # one whole head per rank
    return int((per_rank_real - per_rank_share) * bytes_per_param)


# ---------------------------------------------------------------------------------------------- KV and state


def kv_heads_per_gpu(spec: ModelSpec, tp: int) -> int:
    """KV heads each rank holds: split across ranks, or one replicated head when there are fewer heads than ranks."""
    return max(1, -(-spec.num_kv_heads // tp))


def kv_bytes_per_token(
    spec: ModelSpec,
    kv_dtype_bytes: int = 2,
    tp: int = 1,
    *,
    sliding_as_full: bool = False,
    extra_full_layers: int = 0,
) -> int:
    """KV-cache bytes per token on one GPU: full-attention layers only (MLA: latent + rope, not split by TP).

    Sliding-window layers are counted only with ``sliding_as_full`` (an engine that allocates them like full layers);
    otherwise they are a fixed per-request cost (``sliding_state_bytes``). ``extra_full_layers`` adds MTP draft layers.
    """
    layers = spec.full_attention_layers + extra_full_layers
    if sliding_as_full or spec.full_attention_layers == 0:
        layers += spec.sliding_attention_layers
    if spec.is_mla:
        # one latent "head" of kv_lora_rank + qk_rope_head_dim per layer, the same on every rank
        return ((spec.kv_lora_rank or 0) + (spec.qk_rope_head_dim or 0)) * layers * kv_dtype_bytes
    return 2 * layers * kv_heads_per_gpu(spec, tp) * spec.head_dim * kv_dtype_bytes


def linear_state_bytes(spec: ModelSpec, tp: int = 1, ssm_dtype_bytes: int = 4, conv_dtype_bytes: int = 2) -> int:
    """Fixed state one request keeps in the linear-attention (Gated DeltaNet) layers, per GPU.

    ssm = value_heads/TP x key_dim x value_dim; conv = (2 key + value channels)/TP x (kernel - 1).
    """
    if not spec.is_hybrid_linear:
        return 0
    nk, nv = spec.linear_num_key_heads or 0, spec.linear_num_value_heads or 0
    dk, dv = spec.linear_key_head_dim or 0, spec.linear_value_head_dim or 0
    kernel = spec.linear_conv_kernel_dim or 4
    ssm = (nv // tp) * dk * dv * ssm_dtype_bytes
    conv = (2 * nk * dk + nv * dv) // tp * (kernel - 1) * conv_dtype_bytes
    return spec.linear_attention_layers * (ssm + conv)


def ssm_state_bytes(spec: ModelSpec, tp: int = 1, ssm_dtype_bytes: int = 4) -> int:
    """The SSM part alone (what SGLang's speculative intermediate cache copies per draft token)."""
    if not spec.is_hybrid_linear:
        return 0
    nv = spec.linear_num_value_heads or 0
    return (
        spec.linear_attention_layers
        * (nv // tp)
        * (spec.linear_key_head_dim or 0)
        * (spec.linear_value_head_dim or 0)
        * ssm_dtype_bytes
    )


def sliding_state_bytes(spec: ModelSpec, tp: int, kv_dtype_bytes: int, context: int) -> int:
    """KV one request keeps in sliding-window layers (capped at the window), per GPU."""
    if not spec.sliding_attention_layers or not spec.sliding_window or spec.full_attention_layers == 0:
        return 0
    tokens = min(spec.sliding_window, context)
    per_layer = 2 * kv_heads_per_gpu(spec, tp) * spec.head_dim * kv_dtype_bytes
    return spec.sliding_attention_layers * tokens * per_layer


# ---------------------------------------------------------------------------------------------- budget


class MemoryBudget(Frozen):
    """One GPU at a given TP and engine setting (the fullest GPU of the set: engines take the minimum)."""

    engine: EngineKind
    tp: int
    mem_fraction: float
    total_bytes: int
    free_bytes: int
    used_by_others_bytes: int
    weights_bytes: int  # per GPU
    draft_bytes: int  # SGLang MTP runner's own embedding/head
    overhead_bytes: int  # inside the engine's budget besides weights, draft and KV (vLLM's activations etc.)
    headroom_bytes: int  # kept outside the budget for activations/graphs (SGLang) or unused (vLLM)
    pool_bytes: int  # what is left for KV + per-request state (negative: weights do not fit)
    state_bytes: int  # reserved for per-request fixed state (linear attention, sliding windows, spec caches)
    kv_bytes: int
    kv_bytes_per_token: int
    kv_tokens: int
    startup_ok: bool = True  # vLLM: free memory covers the utilization at start
    notes: list[str] = []

    def margin_bytes(self, context: int) -> int:
        """KV bytes left after one request of ``context`` tokens."""
        return self.kv_bytes - context * self.kv_bytes_per_token


def budget(
    spec: ModelSpec,
    weights: int,
    gpu_total: int,
    gpu_free: int,
    tp: int,
    engine: EngineKind,
    mem_fraction: float,
    *,
    kv_dtype_bytes: int = 2,
    mtp_enabled: bool = False,
    state_per_request: int = 0,
    concurrency: int = 1,
    sliding_aware: bool = True,
    overhead: int | None = None,
    state_share: float = 0.0,
    draft_kv_bytes_per_token: int = 0,
) -> MemoryBudget:
    """Per-GPU figures at ``tp``: weights, KV capacity in tokens at ``mem_fraction``, and what is left.

    ``weights`` is what the engine loads on all ranks together; ``state_per_request`` x ``concurrency`` is
    reserved out of the pool before KV tokens are counted; ``state_share`` reserves at least that share of the pool
    instead (SGLang gives hybrid models' mamba state ratio/(1+ratio) of it, ``--mamba-full-memory-ratio``).
    """
    bytes_per_param = weights / max(1, spec.params.total)
    weights_pg = weights // tp + replicated_extra_bytes(spec, tp, bytes_per_param)
    eng = registry.get(engine)
    draft = eng.draft_extra_bytes(spec, tp) if mtp_enabled else 0
    used_by_others = max(0, gpu_total - gpu_free)
    kvpt = kv_bytes_per_token(
        spec,
        kv_dtype_bytes,
        tp,
        sliding_as_full=not sliding_aware,
        extra_full_layers=(spec.mtp_layers or 0) if mtp_enabled else 0,
    )
    # a separate drafter keeps its own KV for every token the target holds (its layers, its heads)
    kvpt += draft_kv_bytes_per_token
    split = eng.split_budget(mem_fraction, gpu_total, gpu_free, weights_pg, draft, overhead)
    pool = split.pool
    state = max(state_per_request * concurrency, int(max(0, pool) * state_share))
    kv = pool - state
    tokens = kv // kvpt if kv > 0 and kvpt > 0 else 0
    return MemoryBudget(
        engine=engine,
        tp=tp,
        mem_fraction=mem_fraction,
        total_bytes=gpu_total,
        free_bytes=gpu_free,
        used_by_others_bytes=used_by_others,
        weights_bytes=weights_pg,
        draft_bytes=draft,
        overhead_bytes=split.overhead,
        headroom_bytes=split.headroom,
        pool_bytes=pool,
        state_bytes=state,
        kv_bytes=kv,
        kv_bytes_per_token=kvpt,
        kv_tokens=tokens,
        startup_ok=split.startup_ok,
        notes=list(split.notes),
    )
