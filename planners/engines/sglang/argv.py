"""SGLang's launch argv for a fit: MTP knobs, hybrid-model settings, CUDA-graph cap, metrics (LAUNCH_FLAGS.md §1)."""

from __future__ import annotations

from bot.models import PlanFailure, Risk

from ...fit import STATE_SHARE_OF_POOL, Fit, PlanContext
from ..base import ArgvInputs
from . import flags
from . import speculative as drafter_flags
from .memory import sglang_defaults


def _speculative(ctx: PlanContext, fit: Fit, inputs: ArgvInputs) -> tuple[list[str], int | None, int | None]:
    """(MTP args, --max-running-requests, --cuda-graph-max-bs) with their reasons and risks."""
    spec, asked, mtp = ctx.spec, ctx.asked, inputs.mtp
    speculative: list[str] = []
    if mtp:
        algorithm = flags.speculative_algorithm(inputs.help_, inputs.version)
        speculative = flags.mtp_args(algorithm)
        inputs.reasons.append(
            f"MTP: --speculative-algorithm {algorithm} (NEXTN is its alias) with steps {flags.MTP_STEPS}, topk "
            f"{flags.MTP_TOPK}, draft tokens {flags.MTP_STEPS + 1}: all three set (SGLang asserts on a partial "
            "set) and draft = steps + 1, which is what SGLang would rewrite it to at topk 1."
        )
    elif ctx.drafter is not None:
        speculative, why = drafter_flags.drafter_args(ctx.drafter, inputs.help_)
        inputs.reasons.append(why)
    drafting = mtp or ctx.drafter is not None
    max_running = fit.concurrency if (spec.is_hybrid_linear or asked.max_running_requests) else None
    if drafting and max_running is None:
        inputs.risks.append(
            Risk(
                code="silent_rewrite",
                severity="info",
                message="SGLang resets --max-running-requests to 48 under speculative decoding; pass "
                "max_running_requests to choose another",
            )
        )
    graph_bs = asked.cuda_graph_max_bs
    if graph_bs is None and max_running is not None:
        bucket = sglang_defaults(fit.budget.total_bytes, fit.tp, speculative=drafting, spec=spec)
        if max_running < bucket.cuda_graph_max_bs:
            graph_bs = max_running
    return speculative, max_running, graph_bs


def _hybrid(ctx: PlanContext, fit: Fit, inputs: ArgvInputs, max_running: int | None, graph_bs: int | None) -> list[str]:
    """Hybrid (Gated DeltaNet) models: the state note, and under MTP the mamba strategy that can roll back."""
    if not ctx.spec.is_hybrid_linear:
        return []
    if fit.state.note:
        inputs.reasons.append(
            fit.state.note + f". --max-running-requests {max_running}: the most requests whose state fits in "
            f"{STATE_SHARE_OF_POOL:.0%} of the pool"
            + (f"; --cuda-graph-max-bs {graph_bs} to match." if graph_bs else ".")
        )
    if not inputs.mtp and ctx.drafter is None:
        return []
    mamba_args, note = flags.mamba_strategy_args(inputs.help_, inputs.version)
    inputs.env["SGLANG_ENABLE_SPEC_V2"] = "1"
    inputs.reasons.append(
        f"Hybrid model + {'MTP' if inputs.mtp else 'a drafter'}: {note}, so rejected drafts roll back the "
        "recurrent state; "
        "SGLANG_ENABLE_SPEC_V2=1 (ignored with a warning by builds that always use it)."
    )
    return mamba_args


def build(ctx: PlanContext, fit: Fit, inputs: ArgvInputs) -> list[str] | PlanFailure:
    asked, help_ = ctx.asked, inputs.help_
    speculative, max_running, graph_bs = _speculative(ctx, fit, inputs)
    mamba_args = _hybrid(ctx, fit, inputs, max_running, graph_bs)
    problems, rewrites = flags.check_speculative_args(speculative + ctx.overrides.extra_args)
    if problems:
        return PlanFailure(
            reason=problems[0],
            details=problems[1:],
            nearest="set --speculative-num-steps, --speculative-eagle-topk and --speculative-num-draft-tokens together",
        )
    inputs.risks.extend(Risk(code="silent_rewrite", message=r) for r in rewrites)
    return flags.build_argv(
        python=ctx.host.python,
        model_path=ctx.model_path,
        served_name=asked.model,
        bind=ctx.host.bind,
        port=ctx.port,
        tp=fit.tp,
        tp_flag=flags.tp_flag(help_),
        mem_fraction=fit.fraction,
        context_length=inputs.context,
        trust_remote_code=inputs.trust_remote_code,
        speculative=speculative,
        max_running_requests=max_running,
        cuda_graph_max_bs=graph_bs,
        disable_cuda_graph=asked.disable_cuda_graph,
        kv_cache_dtype=asked.kv_cache_dtype,
        quantization=inputs.quantization,
        mamba_ssm_dtype=fit.state.ssm_dtype,
        mamba_args=mamba_args,
        enable_metrics=help_ is None or help_.knows("--enable-metrics") or not help_.looks_complete(flags.CORE_FLAGS),
    )
