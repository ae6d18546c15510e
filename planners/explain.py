"""The planner's sentences: reasons for each choice, risks of shared GPUs, and refusals with the nearest plan."""

from __future__ import annotations

from bot.models import PlanFailure, Risk

from . import compat, memory
from .engines import registry
from .fit import CONTEXT_STEP, Engine, Fit, PlanContext, evaluate, pick_gpus, tp_problem, valid_tps
from .memory import GIB, gib
from .model import ModelSpec, round_down


def weights_reason(ctx: PlanContext, loaded: int, load_notes: list[str]) -> str:
    source = next((n.removeprefix("weights: ") for n in ctx.weight_notes if n.startswith("weights: ")), "")
    extra = "; ".join(load_notes)
    return f"Weights: {gib(loaded)} on the GPUs ({source}" + (f"; {extra}" if extra else "") + ")."


def tp_reason(ctx: PlanContext, chosen: Fit, fits: list[Fit], engine: Engine) -> str:
    b = chosen.budget
    each = f"each GPU holds {gib(b.weights_bytes + b.draft_bytes)} of weights" + (
        f" (incl. {gib(b.draft_bytes)} for the MTP draft runner)" if b.draft_bytes else ""
    )
    tail = f", leaving {gib(b.kv_bytes)} for KV cache ({b.kv_tokens:,} tokens) at the planned memory fraction"
    if ctx.asked.tp is not None or ctx.asked.gpus:
        prefix = f"TP {chosen.tp}, as asked: "
    elif chosen.tp == 1:
        prefix = "TP 1: "
    else:
        smaller = [f for f in fits if f.tp < chosen.tp]
        why = "; ".join(no_fit_sentence(f) for f in smaller) or "smaller TPs do not divide the heads"
        prefix = f"TP {chosen.tp}: {why}; at TP {chosen.tp} "
    status = "" if chosen.status == "margin" else " (no room for the policy margin at any TP)"
    return prefix + each + tail + status + "."


def no_fit_sentence(f: Fit) -> str:
    b = f.budget
    weights = b.weights_bytes + b.draft_bytes
    if weights >= b.total_bytes:
        return f"at TP {f.tp} the {gib(weights)} of weights per GPU do not fit a {gib(b.total_bytes)} GPU"
    if f.status == "no":
        return (
            f"at TP {f.tp} {gib(weights)} of weights per GPU leave "
            f"{gib(max(0, b.kv_bytes))} for KV on a {gib(b.total_bytes)} GPU, short of a {f.min_context}-token "
            "request"
        )
    return (
        f"at TP {f.tp} {gib(weights)} of weights per GPU leave {gib(max(0, b.kv_bytes))} for KV on a "
        f"{gib(b.total_bytes)} GPU, without the margin"
    )


def gpu_reason(ctx: PlanContext, fit: Fit) -> str:
    busy = {g.index: ctx.facts.processes_on(g.index) for g in ctx.facts.gpus}
    chosen = ",".join(map(str, fit.gpus))
    if ctx.asked.gpus:
        return f"GPUs {chosen}, as asked."
    shared = [i for i in fit.gpus if busy.get(i)]
    skipped = [i for i, procs in busy.items() if procs and i not in fit.gpus]
    text = f"GPU{'s' if len(fit.gpus) > 1 else ''} {chosen}: "
    text += "idle" if not shared else f"the least used ({len(shared)} shared with other processes)"
    if skipped:
        text += f"; GPU{'s' if len(skipped) > 1 else ''} {','.join(map(str, skipped))} left alone (in use)"
    return text + "."


def kv_reason(spec: ModelSpec, kvpt: int, tp: int, mtp: bool, engine: Engine, kv_dtype_bytes: int) -> str:
    if spec.is_mla:
        layers = f"MLA latent ({spec.kv_lora_rank}+{spec.qk_rope_head_dim}) x {spec.full_attention_layers} layers"
    else:
        layers = f"{spec.full_attention_layers} full-attention layers of {spec.num_layers}"
        if spec.sliding_attention_layers:
            layers += (
                f" ({spec.sliding_attention_layers} sliding-window layers counted as full: {registry.label(engine)})"
                if registry.get(engine).sliding_as_full
                else f" + {spec.sliding_attention_layers} sliding-window layers capped at "
                f"{spec.sliding_window} tokens per request"
            )
    extra = f" + {spec.mtp_layers} MTP layer(s)" if mtp and spec.mtp_layers else ""
    dtype = "FP8" if kv_dtype_bytes == 1 else "16-bit"
    return f"KV cache: {kvpt / 1024:.1f} KiB per token per GPU at TP {tp} ({layers}{extra}, {dtype})."


def shared_gpu_risks(ctx: PlanContext, fit: Fit) -> list[Risk]:
    risks: list[Risk] = []
    for index in fit.gpus:
        procs = ctx.facts.processes_on(index)
        if not procs:
            continue
        gpu = ctx.facts.gpu(index)
        held = sum(p.used_bytes or 0 for p in procs)
        who = ", ".join(
            f"pid {p.pid}"
            + (f" ({p.server.engine} serving {p.server.model_path})" if p.server else f" ({p.name})" if p.name else "")
            for p in procs[:3]
        )
        free = gib(gpu.memory_free_bytes) if gpu else "?"
        risks.append(
            Risk(
                code="shared_gpu",
                message=f"GPU {index} is shared with {who}, holding {gib(held)}; this plan counts on the {free} "
                "still free and fails if they grow",
            )
        )
    return risks


def does_not_fit(
    ctx: PlanContext,
    engine: Engine,
    fits: list[Fit],
    loaded: int,
    kv_dtype_bytes: int,
    mtp: bool,
    fp8_problem: str | None,
) -> PlanFailure:
    asked, facts = ctx.asked, ctx.facts
    n = len(facts.gpus)
    sizes = sorted({g.memory_total_bytes for g in facts.gpus})
    host_total = sum(g.memory_total_bytes for g in facts.gpus)
    gpu_text = f"{n}x {gib(sizes[0])}" if len(sizes) == 1 else ", ".join(gib(g.memory_total_bytes) for g in facts.gpus)
    largest = max(fits, key=lambda f: f.tp) if fits else None
    if largest is None:
        reason = f"no TP up to {n} divides the heads of {asked.model}"
        return PlanFailure(reason=reason, weights_bytes=loaded)
    if loaded >= host_total * 0.95 or (largest.budget.weights_bytes >= largest.budget.total_bytes):
        reason = (
            f"{asked.model} needs ~{gib(loaded)} of weights; {facts.host} has {gpu_text} = {gib(host_total)} "
            "of GPU memory: "
            + (
                "does not fit at any TP"
                if asked.tp is None and not asked.gpus
                else f"at TP {largest.tp} each GPU would hold {gib(largest.budget.weights_bytes)}, more than it can "
                f"take with room for KV cache"
            )
        )
    elif asked.tp is not None or asked.gpus:
        reason = f"TP {largest.tp} as asked: {no_fit_sentence(largest)}"
    else:
        reason = f"{asked.model} does not fit on {facts.host} at any TP: {no_fit_sentence(largest)}"
    details = [
        f"checkpoint {gib(ctx.checkpoint_bytes)}, {gib(loaded)} loaded"
        if ctx.checkpoint_bytes != loaded
        else f"checkpoint {gib(ctx.checkpoint_bytes)}"
    ]
    details += [no_fit_sentence(f) for f in fits]
    if fp8_problem:
        details.append(fp8_problem)
    details += [n for n in ctx.weight_notes if not n.startswith("weights: ")]
    return PlanFailure(
        reason=reason,
        details=details,
        nearest=nearest_that_fits(ctx, engine, fits, loaded, kv_dtype_bytes, mtp),
        weights_bytes=loaded,
    )


def nearest_that_fits(
    ctx: PlanContext, engine: Engine, fits: list[Fit], loaded: int, kv_dtype_bytes: int, mtp: bool
) -> str | None:
    spec, asked, facts = ctx.spec, ctx.asked, ctx.facts
    options: list[str] = []
    # 1. the asked context is the obstacle: the largest context that fits
    thin_or_pool = [f for f in fits if f.budget.pool_bytes > 0 and f.budget.kv_bytes_per_token > 0]
    if asked.context and thin_or_pool:
        best = max(thin_or_pool, key=lambda f: f.budget.kv_tokens)
        tokens = round_down(best.budget.kv_tokens, CONTEXT_STEP)
        if tokens >= CONTEXT_STEP:
            options.append(f"context {tokens} at TP {best.tp}")
    # 2. a larger TP on this host (when TP was pinned)
    if asked.tp is not None or asked.gpus:
        for tp in valid_tps(spec, len(facts.gpus)):
            if tp <= (asked.tp or len(asked.gpus or [])):
                continue
            alt = evaluate(ctx, engine, None, tp, pick_gpus(facts, tp), loaded, kv_dtype_bytes, mtp)
            if alt.status != "no":
                options.append(
                    f"TP {tp} on {facts.host} ({gib(alt.budget.weights_bytes)} of weights per GPU, "
                    f"{alt.budget.kv_tokens:,} KV tokens)"
                )
                break
    # 3. more GPUs of this size, or bigger ones
    gpu_bytes = min(g.memory_total_bytes for g in facts.gpus)
    if not options:
        bigger: list[str] = []
        sizes = (
            (f"{gib(gpu_bytes)} GPUs like {facts.host}'s", gpu_bytes),
            ("80 GiB GPUs (H100/A100)", 80 * GIB),
            ("141 GiB GPUs (H200)", 141 * GIB),
        )
        found = sorted(
            (
                (tp, name, size)
                for name, size in sizes
                if size >= gpu_bytes
                for tp in [gpus_needed(spec, loaded, size)]
                if tp
            ),
            key=lambda item: (item[0], item[2]),
        )
        bigger = [
            f"TP {tp} on {name} ({gib(loaded / tp)} of weights each" + (", two nodes" if tp > 8 else "") + ")"
            for tp, name, _ in found[:2]
        ]
        options.append(" or ".join(bigger) if bigger else "a host with more GPU memory")
    # 4. a smaller checkpoint
    if not spec.quantization:
        fp8 = memory.loaded_weight_bytes(spec, ctx.checkpoint_bytes, mtp_enabled=mtp, online_fp8=True)[0]
        ccs = [c for c in (compat.compute_capability(g) for g in facts.gpus) if c]
        mode, _ = compat.fp8_mode(engine, min(ccs) if ccs else None)
        usable = sum(g.memory_total_bytes for g in facts.gpus)
        if mode in {"native", "weight_only"} and fp8 < 0.8 * usable:
            options.append(f"FP8 (~{gib(fp8)} of weights; quantization fp8)")
        else:
            options.append(f"a 4-bit (AWQ/GPTQ) checkpoint (~{gib(loaded * 0.28)})")
    elif spec.quantization.is_fp8:
        options.append(f"a 4-bit checkpoint (~{gib(loaded * 0.55)})")
    return " / ".join(options) or None


def gpus_needed(spec: ModelSpec, loaded: int, gpu_bytes: int) -> int | None:
    """Smallest valid TP (up to 16) whose weights per GPU leave a fifth of the GPU for KV and runtime."""
    for tp in (1, 2, 4, 8, 16):
        if tp_problem(spec, tp):
            continue
        if loaded / tp <= 0.8 * gpu_bytes:
            return tp
    return None


def _other_engine(ctx: PlanContext, engine: Engine) -> str | None:
    """The first other registered engine installed (and importable) on the host."""
    return next(
        (
            name
            for name in registry.names()
            if name != engine and (install := ctx.facts.engines.get(name)) is not None and not install.error
        ),
        None,
    )


def other_engine_nearest(ctx: PlanContext, engine: Engine, why: str = "") -> str | None:
    other = _other_engine(ctx, engine)
    if other is None:
        return None
    install = ctx.facts.engines[other]
    return f"{compat.engine_label(other, install.version)} is installed on {ctx.facts.host}" + (
        f": {why}" if why else ""
    )


def upgrade_nearest(ctx: PlanContext, engine: Engine) -> str:
    minimum, _ = compat.minimum_version(ctx.spec, ctx.asked.model, engine)
    upgrade = f"upgrade {compat.engine_name(engine)} to >= {minimum}" if minimum else "upgrade"
    other = other_engine_nearest(ctx, engine)
    other_name = _other_engine(ctx, engine)
    if other and other_name:
        other_version = ctx.facts.engines[other_name].version
        if compat.check_engine(ctx.spec, ctx.asked.model, other_name, other_version).ok:
            return f"{other} and serves it (ask for {other_name}) / {upgrade}"
    return upgrade
