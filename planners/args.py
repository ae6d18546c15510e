"""The argv and env of a plan: engine flags from a fit, then the overrides (extra / removed args, env)."""

from __future__ import annotations

import re

from bot.models import PlanFailure, Risk

from . import compat, memory
from .engines.sglang import flags as sglang
from .engines.vllm import flags as vllm
from .fit import STATE_SHARE_OF_POOL, Engine, Fit, PlanContext, vllm_num_spec_tokens
from .flags import EngineHelp, flags_in, remove_flags

#: Flags the planner owns; extra_args may not set them again (use the override fields).
PLAN_OWNED_FLAGS = frozenset(
    {
        "--model-path",
        "--model",
        "--host",
        "--port",
        "--tp-size",
        "--tp",
        "--tensor-parallel-size",
        "--served-model-name",
        "--mem-fraction-static",
        "--gpu-memory-utilization",
        "--context-length",
        "--max-model-len",
    }
)

ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,63}$")


def sglang_argv(
    ctx: PlanContext,
    fit: Fit,
    version: str | None,
    help_: EngineHelp | None,
    context: int,
    trust: bool,
    quant_flag: str | None,
    mtp: bool,
    reasons: list[str],
    risks: list[Risk],
    env: dict[str, str],
) -> list[str] | PlanFailure:
    spec, asked = ctx.spec, ctx.asked
    speculative: list[str] = []
    mamba_args: list[str] = []
    if mtp:
        algorithm = sglang.speculative_algorithm(help_, version)
        speculative = sglang.mtp_args(algorithm)
        reasons.append(
            f"MTP: --speculative-algorithm {algorithm} (NEXTN is its alias) with steps {sglang.MTP_STEPS}, topk "
            f"{sglang.MTP_TOPK}, draft tokens {sglang.MTP_STEPS + 1}: all three set (SGLang asserts on a partial "
            "set) and draft = steps + 1, which is what SGLang would rewrite it to at topk 1."
        )
    max_running = fit.concurrency if (spec.is_hybrid_linear or asked.max_running_requests) else None
    if mtp and max_running is None:
        risks.append(
            Risk(
                code="silent_rewrite",
                severity="info",
                message="SGLang resets --max-running-requests to 48 under speculative decoding; pass "
                "max_running_requests to choose another",
            )
        )
    graph_bs = asked.cuda_graph_max_bs
    if graph_bs is None and max_running is not None:
        bucket = memory.sglang_defaults(fit.budget.total_bytes, fit.tp, speculative=mtp, spec=spec)
        if max_running < bucket.cuda_graph_max_bs:
            graph_bs = max_running
    if spec.is_hybrid_linear:
        if fit.state.note:
            reasons.append(
                fit.state.note + f". --max-running-requests {max_running}: the most requests whose state fits in "
                f"{STATE_SHARE_OF_POOL:.0%} of the pool"
                + (f"; --cuda-graph-max-bs {graph_bs} to match." if graph_bs else ".")
            )
        if mtp:
            mamba_args, note = sglang.mamba_strategy_args(help_, version)
            env["SGLANG_ENABLE_SPEC_V2"] = "1"
            reasons.append(
                f"Hybrid model + MTP: {note}, so rejected drafts roll back the recurrent state; "
                "SGLANG_ENABLE_SPEC_V2=1 (ignored with a warning by builds that always use it)."
            )
    problems, rewrites = sglang.check_speculative_args(speculative + ctx.overrides.extra_args)
    if problems:
        return PlanFailure(
            reason=problems[0],
            details=problems[1:],
            nearest="set --speculative-num-steps, --speculative-eagle-topk and --speculative-num-draft-tokens together",
        )
    risks += [Risk(code="silent_rewrite", message=r) for r in rewrites]
    return sglang.build_argv(
        python=ctx.host.python,
        model_path=ctx.model_path,
        served_name=asked.model,
        bind=ctx.host.bind,
        port=ctx.port,
        tp=fit.tp,
        tp_flag=sglang.tp_flag(help_),
        mem_fraction=fit.fraction,
        context_length=context,
        trust_remote_code=trust,
        speculative=speculative,
        max_running_requests=max_running,
        cuda_graph_max_bs=graph_bs,
        disable_cuda_graph=asked.disable_cuda_graph,
        kv_cache_dtype=asked.kv_cache_dtype,
        quantization=quant_flag,
        mamba_ssm_dtype=fit.state.ssm_dtype,
        mamba_args=mamba_args,
        enable_metrics=help_ is None or help_.knows("--enable-metrics")
        or not help_.looks_complete(sglang.CORE_FLAGS),
    )


def vllm_argv(
    ctx: PlanContext,
    fit: Fit,
    version: str | None,
    help_: EngineHelp | None,
    context: int,
    trust: bool,
    quant_flag: str | None,
    mtp: bool,
    reasons: list[str],
    risks: list[Risk],
) -> list[str] | PlanFailure:
    spec, asked = ctx.spec, ctx.asked
    spec_json = None
    if mtp:
        method = compat.vllm_mtp_method(spec, version)
        n = vllm_num_spec_tokens(spec)
        spec_json = vllm.speculative_config(method, n)
        reasons.append(
            f"MTP: --speculative-config {spec_json}: method {method!r} for {compat.engine_label('vllm', version)}, "
            f"{n} speculative token(s) for {spec.mtp_layers or 'an unknown number of'} MTP layer(s) "
            "(the recipes' MTP-1: more tokens on a one-layer head lower the acceptance rate)."
        )
    if fit.state.note:
        reasons.append(
            fit.state.note + f"; --max-num-seqs {fit.concurrency} keeps the state within "
            f"{STATE_SHARE_OF_POOL:.0%} of the pool."
        )
    cuda_graph: list[str] = []
    if asked.cuda_graph_max_bs is not None and not asked.disable_cuda_graph:
        cuda_graph, note = vllm.cuda_graph_args(help_, asked.cuda_graph_max_bs)
        if note:
            reasons.append(note + ".")
    return vllm.build_argv(
        python=ctx.host.python,
        model_path=ctx.model_path,
        served_name=asked.model,
        bind=ctx.host.bind,
        port=ctx.port,
        tp=fit.tp,
        utilization=fit.fraction,
        max_model_len=context,
        trust_remote_code=trust,
        speculative_config_json=spec_json,
        max_num_seqs=asked.max_running_requests or fit.concurrency,
        enforce_eager=asked.disable_cuda_graph,
        cuda_graph=cuda_graph,
        kv_cache_dtype=asked.kv_cache_dtype,
        quantization=quant_flag,
    )


def apply_arg_overrides(
    ctx: PlanContext, engine: Engine, argv: list[str], reasons: list[str], risks: list[Risk]
) -> list[str] | PlanFailure:
    o = ctx.overrides
    if o.remove_args:
        protected = [a for a in o.remove_args if a in PLAN_OWNED_FLAGS]
        if protected:
            return PlanFailure(
                reason=f"cannot remove {', '.join(protected)}: the plan needs it (change the matching field instead)"
            )
        argv, removed = remove_flags(argv, o.remove_args)
        if removed:
            reasons.append(f"Removed as asked: {' '.join(removed)}.")
        if engine == "sglang" and "--max-running-requests" in removed and ctx.asked.speculative == "mtp":
            risks.append(
                Risk(
                    code="silent_rewrite",
                    message="without --max-running-requests SGLang resets it to 48 under speculative decoding",
                )
            )
    if o.extra_args:
        owned = [flag for _, flag, _ in flags_in(o.extra_args) if flag in PLAN_OWNED_FLAGS]
        if owned:
            return PlanFailure(
                reason=f"extra argument {owned[0]} conflicts with the plan's own; use the "
                "override field for it (tp, port, context_length, mem_fraction)"
            )
        present = {flag for _, flag, _ in flags_in(argv[3:])}
        dupes = [flag for _, flag, _ in flags_in(o.extra_args) if flag in present]
        if dupes:
            argv, _ = remove_flags(argv, dupes)
            reasons.append(f"Replaced by the extra arguments: {' '.join(dupes)}.")
        argv = argv + list(o.extra_args)
        reasons.append(f"Extra arguments: {' '.join(o.extra_args)}.")
    return argv
