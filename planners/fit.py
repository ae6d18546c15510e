"""Does a model fit a set of GPUs at a TP, and with which memory fraction, context and concurrency?

The engine's own default fraction is tried first; a raised one (SGLang up to 0.85 or its pre-VLM value, vLLM up to
0.95) only when the default leaves too little KV cache for the goal (the asked or full context with the policy's
margin, and for hybrid models state for MIN_HYBRID_CONCURRENCY requests); vLLM's is lowered to what is free on a
shared GPU because vLLM refuses to start otherwise.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.config import HostConfig, Policy
from bot.models import DeployRequest, GpuBudget, HostFacts, PlanOverrides

from . import compat, memory
from .engines.sglang import flags as sglang
from .engines.vllm import flags as vllm
from .flags import parse_help
from .memory import GIB, MIB, MemoryBudget, gib
from .model import ModelSpec

Engine = Literal["sglang", "vllm"]

Status = Literal["margin", "thin", "no"]

#: Without an asked context, a TP "fits" when one request of this many tokens (or the model's max, if smaller)
#: fits in KV with the policy's margin to spare; the context is then raised as far as KV allows.
MIN_USEFUL_CONTEXT = 8192

#: Contexts are rounded down to this many tokens when capped.
CONTEXT_STEP = 1024

#: SGLang's memory fraction is raised at most to this (or its own pre-VLM value if higher): "Do not raise
#: --mem-fraction-static above 0.85" on small GPUs (engines/MEMORY_MODEL.md §2).
SGLANG_FRACTION_CEILING = 0.85

#: Hybrid models: per-request state (recurrent state, spec caches) may take at most this share of the pool.
STATE_SHARE_OF_POOL = 0.25

CONCURRENCY_STEPS = (48, 32, 16, 8, 4, 2, 1)

#: Hybrid models: a raised memory fraction is worth it when the default leaves state for fewer requests than this.
MIN_HYBRID_CONCURRENCY = 8

#: GPUs below this size get bf16 SSM state under MTP (the notes' advice for 48 GB cards).
SMALL_GPU_BYTES = 60 * GIB


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)


class Asked(Frozen):
    """The request with overrides applied: what the person (or the diagnoser) pinned."""

    model: str
    tp: int | None
    gpus: list[int] | None
    port: int | None
    engine: Engine | None
    speculative: Literal["mtp", "none"]
    context: int | None
    quantization: str | None
    kv_cache_dtype: str | None
    mem_fraction: float | None
    max_running_requests: int | None
    cuda_graph_max_bs: int | None
    disable_cuda_graph: bool


class EngineState(Frozen):
    """What an engine keeps per request besides KV, and how it reserves it (hybrid and sliding-window models)."""

    per_request: int = 0
    share: float = 0.0  # at least this share of the pool goes to state (SGLang's mamba split)
    ssm_dtype: str | None = None  # --mamba-ssm-dtype to pass (SGLang)
    note: str | None = None
    sliding_aware: bool = False  # sliding-window layers cost a window per request, not KV per token


class Slot(Frozen):
    """The GPUs one TP would use and the load put on them."""

    tp: int
    gpus: list[int]
    total: int  # of the smallest GPU in the set, and the least free: engines size by the fullest rank
    free: int
    gpu_name: str
    loaded: int
    kv_dtype_bytes: int
    mtp: bool
    min_context: int
    margin: int


class Fit(Frozen):
    """One TP / GPU set / memory fraction evaluated."""

    tp: int
    gpus: list[int]
    status: Status
    budget: MemoryBudget
    min_context: int
    fraction: float
    fraction_reason: str
    concurrency: int | None = None  # explicit max running requests / max num seqs, when the plan sets one
    state: EngineState = EngineState()


class PlanContext(Frozen):
    request: DeployRequest
    facts: HostFacts
    host: HostConfig
    policy: Policy
    overrides: PlanOverrides
    asked: Asked
    spec: ModelSpec
    model_path: str
    checkpoint_bytes: int
    weight_notes: list[str] = Field(default_factory=list)
    port: int
    port_reason: str


def valid_tps(spec: ModelSpec, max_gpus: int) -> list[int]:
    """TP sizes up to ``max_gpus`` that divide the attention heads (and KV heads, unless replicated)."""
    return [t for t in range(1, max_gpus + 1) if not tp_problem(spec, t)]


def tp_problem(spec: ModelSpec, tp: int) -> str | None:
    if spec.num_attention_heads % tp:
        return f"TP {tp} does not divide the {spec.num_attention_heads} attention heads"
    kv = spec.num_kv_heads
    if not spec.is_mla and kv % tp and tp % kv:
        return f"TP {tp} does not divide the {kv} KV heads (nor is a multiple of them, for replication)"
    for name, heads in (("linear key", spec.linear_num_key_heads), ("linear value", spec.linear_num_value_heads)):
        if heads and heads % tp:
            return f"TP {tp} does not divide the {heads} {name} heads"
    return None


def pick_gpus(facts: HostFacts, tp: int) -> list[int]:
    """Idle GPUs first, then the most free memory, then the lowest index."""
    ranked = sorted(
        facts.gpus,
        key=lambda g: (1 if facts.processes_on(g.index) else 0, -g.memory_free_bytes, g.index),
    )
    return sorted(g.index for g in ranked[:tp])


def choose_concurrency(pool: int, per_request: int) -> int:
    if per_request <= 0 or pool <= 0:
        return 1
    allowed = STATE_SHARE_OF_POOL * pool
    return next((r for r in CONCURRENCY_STEPS if r * per_request <= allowed), 1)


def classify(b: MemoryBudget, min_context: int, margin: int) -> Status:
    if b.pool_bytes <= 0 or not b.startup_ok or b.kv_bytes_per_token <= 0:
        return "no"
    need = min_context * b.kv_bytes_per_token
    if b.kv_bytes - need >= margin:
        return "margin"
    return "thin" if b.kv_bytes >= need else "no"


def evaluate(
    ctx: PlanContext,
    engine: Engine,
    version: str | None,
    tp: int,
    gpus: list[int],
    loaded: int,
    kv_dtype_bytes: int,
    mtp: bool,
) -> Fit:
    """The best memory fraction at this TP: the engine's default unless a raised one is needed for the goal."""
    spec, asked = ctx.spec, ctx.asked
    infos = [g for g in (ctx.facts.gpu(i) for i in gpus) if g is not None]
    model_max = spec.max_position_embeddings or MIN_USEFUL_CONTEXT
    slot = Slot(
        tp=tp,
        gpus=gpus,
        total=min(g.memory_total_bytes for g in infos),
        free=min(g.memory_free_bytes for g in infos),
        gpu_name=infos[0].name,
        loaded=loaded,
        kv_dtype_bytes=kv_dtype_bytes,
        mtp=mtp,
        min_context=asked.context or min(model_max, MIN_USEFUL_CONTEXT),
        margin=int(ctx.policy.min_margin_gib * GIB),
    )
    overhead: int | None = None
    if engine == "sglang":
        state, fractions = sglang_state(ctx, slot), sglang_fractions(ctx, slot)
    else:
        state, fractions = vllm_state(ctx, slot, version), vllm_fractions(ctx, slot)
        batched, seqs = memory.vllm_batch_defaults(slot.total, slot.gpu_name)
        overhead = memory.vllm_overhead_bytes(spec, tp, batched, asked.max_running_requests or seqs)
    options = [fit_at(ctx, engine, slot, state, fraction, reason, overhead) for fraction, reason in fractions]
    # the goal: the asked (else the model's full) context with margin, and for hybrid models enough state for
    # MIN_HYBRID_CONCURRENCY requests; the first fraction (the default first) that meets it wins
    goal_context = asked.context or model_max
    want_concurrency = MIN_HYBRID_CONCURRENCY if spec.is_hybrid_linear and not asked.max_running_requests else None

    def meets(f: Fit) -> bool:
        b = f.budget
        return (
            f.status == "margin"
            and b.kv_bytes - goal_context * b.kv_bytes_per_token >= slot.margin
            and (want_concurrency is None or (f.concurrency or 0) >= want_concurrency)
        )

    rank = {"margin": 2, "thin": 1, "no": 0}
    return next((f for f in options if meets(f)), None) or max(
        options, key=lambda f: (rank[f.status], f.concurrency or 0, f.budget.kv_tokens)
    )


def fit_at(
    ctx: PlanContext,
    engine: Engine,
    slot: Slot,
    state: EngineState,
    fraction: float,
    reason: str,
    vllm_overhead: int | None,
) -> Fit:
    spec, asked = ctx.spec, ctx.asked
    common = dict(
        kv_dtype_bytes=slot.kv_dtype_bytes,
        mtp_enabled=slot.mtp,
        sliding_aware=state.sliding_aware,
        vllm_overhead=vllm_overhead,
    )
    concurrency = asked.max_running_requests
    if concurrency is None and spec.is_hybrid_linear:
        pool = memory.budget(spec, slot.loaded, slot.total, slot.free, slot.tp, engine, fraction, **common)
        concurrency = choose_concurrency(pool.pool_bytes, state.per_request)
    b = memory.budget(
        spec,
        slot.loaded,
        slot.total,
        slot.free,
        slot.tp,
        engine,
        fraction,
        state_per_request=state.per_request,
        concurrency=concurrency or 1,
        state_share=state.share,
        **common,
    )
    return Fit(
        tp=slot.tp,
        gpus=slot.gpus,
        status=classify(b, slot.min_context, slot.margin),
        budget=b,
        min_context=slot.min_context,
        fraction=fraction,
        fraction_reason=reason,
        concurrency=concurrency,
        state=state,
    )


def _linear_note(spec: ModelSpec, base: int) -> str:
    return (
        f"{spec.linear_attention_layers} of {spec.num_layers} layers are linear attention (Gated DeltaNet): "
        f"{base / MIB:.0f} MiB of recurrent state per request per GPU"
    )


def sglang_state(ctx: PlanContext, slot: Slot) -> EngineState:
    """Hybrid models on SGLang: recurrent state per request, its dtype, and SGLang's mamba/KV split of the pool."""
    spec = ctx.spec
    if not spec.is_hybrid_linear:
        return EngineState()  # sliding-window layers: SGLang's pool is sized as if they were full (conservative)
    small_mtp = slot.mtp and slot.total < SMALL_GPU_BYTES
    config_bf16 = (spec.mamba_ssm_dtype or "float32").lower() in {"bfloat16", "bf16"}
    ssm_dtype = "bfloat16" if small_mtp or config_bf16 else None
    ssm_bytes = 2 if ssm_dtype else 4
    base = memory.linear_state_bytes(spec, slot.tp, ssm_bytes)
    per_request = base
    note = _linear_note(spec, base)
    if slot.mtp:
        # extra_buffer keeps two more state copies per request (ping-pong); verification keeps one SSM state per
        # draft token in the intermediate cache
        draft_tokens = sglang.MTP_STEPS + 1
        per_request = 3 * base + draft_tokens * memory.ssm_state_bytes(spec, slot.tp, ssm_bytes)
        note += f", {per_request / MIB:.0f} MiB with the extra_buffer copies and the MTP verification cache"
    if small_mtp:
        note += (
            f" (--mamba-ssm-dtype bfloat16 halves the SSM state: a GPU under {gib(SMALL_GPU_BYTES)} with MTP, "
            "as the notes advise)"
        )
    help_text = ctx.facts.engine_help.get("sglang")
    mamba_args, _ = sglang.mamba_strategy_args(parse_help(help_text) if help_text else None)
    radix_off = slot.mtp and mamba_args == ["--disable-radix-cache"]
    share = memory.sglang_mamba_share(radix_cache=not radix_off)
    if share:
        note += (
            f"; SGLang gives the mamba state {share:.0%} of the pool "
            f"(--mamba-full-memory-ratio {memory.SGLANG_MAMBA_FULL_MEMORY_RATIO}), KV the rest"
        )
    return EngineState(per_request=per_request, share=share, ssm_dtype=ssm_dtype, note=note)


def sglang_fractions(ctx: PlanContext, slot: Slot) -> list[tuple[float, str]]:
    """SGLang's own default first; then a raised one (up to the ceiling), each with its reason."""
    spec, asked = ctx.spec, ctx.asked
    if asked.mem_fraction is not None:
        return [(asked.mem_fraction, f"mem-fraction-static {asked.mem_fraction:.3g}, as asked.")]
    defaults = memory.sglang_defaults(
        slot.total, slot.tp, speculative=slot.mtp, spec=spec, cuda_graph_max_bs=asked.cuda_graph_max_bs
    )
    vlm = f", x{defaults.vlm_factor:.3f} for the vision tower" if defaults.vlm_factor != 1 else ""
    draft = ", the draft model" if slot.mtp else ""
    fractions = [
        (
            defaults.fraction,
            f"mem-fraction-static {defaults.fraction:.3g}: SGLang's own default for a {gib(slot.total)} GPU at TP "
            f"{slot.tp} (reserves {defaults.reserved_mib:,.0f} MiB for prefill activations, CUDA graphs{draft}{vlm}); "
            "set explicitly so the plan's figures hold.",
        )
    ]
    ceiling = min(0.92, max(SGLANG_FRACTION_CEILING, defaults.fraction_before_vlm))
    if ceiling > defaults.fraction + 0.005:
        goal = "full context" + (f", {MIN_HYBRID_CONCURRENCY} concurrent requests" if spec.is_hybrid_linear else "")
        images = " (the default's multimodal cut assumes images; text traffic needs less)" if vlm else ""
        fractions.append(
            (
                ceiling,
                f"mem-fraction-static raised from SGLang's default {defaults.fraction:.3g} to {ceiling:.3g}: the "
                f"default leaves too little KV cache or per-request state for the goal ({goal}); "
                f"{gib((1 - ceiling) * slot.total)} per GPU stays outside for activations and CUDA graphs{images}.",
            )
        )
    return fractions


def vllm_state(ctx: PlanContext, slot: Slot, version: str | None) -> EngineState:
    """vLLM keeps GDN state (fp32 SSM, bf16 conv) in 1 + num_speculative blocks per request, and windows per request
    for sliding layers (its hybrid allocator, 0.10+)."""
    spec = ctx.spec
    sliding_aware = compat.at_least(version, "0.10.0") is True
    per_request = 0
    note = None
    if spec.is_hybrid_linear:
        num_spec = vllm_num_spec_tokens(spec) if slot.mtp else 0
        base = memory.linear_state_bytes(spec, slot.tp, 4)
        per_request = base * (1 + num_spec)
        note = _linear_note(spec, base) + (
            f", x{1 + num_spec} state blocks with {num_spec} speculative token(s)" if num_spec else ""
        )
    if sliding_aware and spec.sliding_attention_layers and spec.full_attention_layers:
        per_request += memory.sliding_state_bytes(spec, slot.tp, slot.kv_dtype_bytes, spec.sliding_window or 0)
    return EngineState(per_request=per_request, note=note, sliding_aware=sliding_aware)


def vllm_fractions(ctx: PlanContext, slot: Slot) -> list[tuple[float, str]]:
    """vLLM's default (lowered to what is free on a shared GPU), then a raised one, each with its reason."""
    asked = ctx.asked
    if asked.mem_fraction is not None:
        return [(asked.mem_fraction, f"gpu-memory-utilization {asked.mem_fraction:.2f}, as asked.")]
    default = vllm.DEFAULT_UTILIZATION
    # vLLM refuses to start unless free memory covers utilization x total: keep 512 MiB of slack
    affordable = math.floor((slot.free - 512 * MIB) / slot.total * 100) / 100
    if affordable < default:
        return [
            (
                affordable,
                f"gpu-memory-utilization lowered from {default:.2f} to {affordable:.2f}: other processes hold "
                f"{gib(slot.total - slot.free)} of the GPU, and vLLM refuses to start when free memory is below "
                "utilization x total.",
            )
        ]
    fractions = [
        (
            default,
            f"gpu-memory-utilization {default:.2f}: vLLM's default, set explicitly so the plan's figures hold across "
            "versions (the newest default is 0.92).",
        )
    ]
    raised = min(vllm.MAX_UTILIZATION, affordable)
    if raised > default + 0.005:
        fractions.append(
            (
                raised,
                f"gpu-memory-utilization raised from {default:.2f} to {raised:.2f}: the default leaves too little KV "
                f"cache for the full context; {gib((1 - raised) * slot.total)} per GPU stays outside vLLM's budget.",
            )
        )
    return fractions


def vllm_num_spec_tokens(spec: ModelSpec) -> int:
    """One speculative token per MTP layer (the recipes' MTP-1 for one-layer heads); 1 when unknown."""
    return max(1, min(spec.mtp_layers or 1, 3))


def per_gpu_budgets(
    ctx: PlanContext, engine: Engine, fit: Fit, loaded: int, kv_dtype_bytes: int, mtp: bool, context: int
) -> list[GpuBudget]:
    """The chosen fit, GPU by GPU (each GPU's own free memory)."""
    out: list[GpuBudget] = []
    ref = fit.budget
    for index in fit.gpus:
        gpu = ctx.facts.gpu(index)
        if gpu is None:
            continue
        b = memory.budget(
            ctx.spec,
            loaded,
            gpu.memory_total_bytes,
            gpu.memory_free_bytes,
            fit.tp,
            engine,
            fit.fraction,
            kv_dtype_bytes=kv_dtype_bytes,
            mtp_enabled=mtp,
            state_per_request=fit.state.per_request,
            concurrency=fit.concurrency or 1,
            sliding_aware=fit.state.sliding_aware,
            vllm_overhead=ref.overhead_bytes,
            state_share=fit.state.share,
        )
        out.append(
            GpuBudget(
                gpu_index=index,
                total_bytes=gpu.memory_total_bytes,
                free_bytes=gpu.memory_free_bytes,
                weights_bytes=b.weights_bytes + b.draft_bytes,
                overhead_bytes=b.overhead_bytes + b.state_bytes,
                kv_bytes=max(0, b.kv_bytes),
                kv_tokens=b.kv_tokens,
                margin_bytes=b.margin_bytes(context),
            )
        )
    return out
