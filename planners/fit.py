"""Does a model fit a set of GPUs at a TP, and with which memory fraction, context and concurrency?

The engine's own default fraction is tried first (each engine's memory.py lists its fractions, default first); a
raised one wins only when the default leaves too little KV cache for the goal (the asked or full context with the
policy's margin, and for hybrid models state for MIN_HYBRID_CONCURRENCY requests).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.config import HostConfig, Policy
from bot.models import DeployRequest, GpuBudget, HostFacts, PlanOverrides, Speculative

from . import memory
from .engines import registry
from .drafters import Drafter, draft_kv_bytes_per_token
from .memory import GIB, MemoryBudget
from .model import ModelSpec

#: A registered engine's name (planners/engines/registry.py).
Engine = str

Status = Literal["margin", "thin", "no"]

#: Without an asked context, a TP "fits" when one request of this many tokens (or the model's max, if smaller)
#: fits in KV with the policy's margin to spare; the context is then raised as far as KV allows.
MIN_USEFUL_CONTEXT = 8192

#: Contexts are rounded down to this many tokens when capped.
CONTEXT_STEP = 1024

#: Hybrid models: per-request state (recurrent state, spec caches) may take at most this share of the pool.
STATE_SHARE_OF_POOL = 0.25

CONCURRENCY_STEPS = (48, 32, 16, 8, 4, 2, 1)

#: Hybrid models: a raised memory fraction is worth it when the default leaves state for fewer requests than this.
MIN_HYBRID_CONCURRENCY = 8


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)


class Asked(Frozen):
    """The request with overrides applied: what the person (or the diagnoser) pinned."""

    model: str
    tp: int | None
    gpus: list[int] | None
    port: int | None
    engine: Engine | None
    speculative: Speculative
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
    ssm_dtype: str | None = None  # the recurrent state's dtype to pass (SGLang's --mamba-ssm-dtype)
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
    #: The separate drafter the plan runs with (DFlash, EAGLE-3, standalone), when one was asked for.
    drafter: Drafter | None = None

    def draft_kv(self, tp: int, kv_dtype_bytes: int) -> int:
        """The drafter's KV bytes per token on one GPU (0 without a drafter)."""
        return draft_kv_bytes_per_token(self.drafter, tp, kv_dtype_bytes) if self.drafter else 0


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
    eng = registry.get(engine)
    state, fractions, overhead = eng.state(ctx, slot, version), eng.fractions(ctx, slot), eng.overhead(ctx, slot)
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
    overhead: int | None,
) -> Fit:
    spec, asked = ctx.spec, ctx.asked
    common = dict(
        kv_dtype_bytes=slot.kv_dtype_bytes,
        mtp_enabled=slot.mtp,
        sliding_aware=state.sliding_aware,
        overhead=overhead,
        draft_kv_bytes_per_token=ctx.draft_kv(slot.tp, slot.kv_dtype_bytes),
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
            overhead=ref.overhead_bytes,
            state_share=fit.state.share,
            draft_kv_bytes_per_token=ctx.draft_kv(fit.tp, kv_dtype_bytes),
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
