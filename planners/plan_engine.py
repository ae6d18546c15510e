"""One engine's plan, engine-neutral: check -> fit -> context -> engine.build_argv -> validate against its --help.

Everything engine-specific is asked of the engine (planners/engines/<name>/): its memory model inside the fit,
its argv, its flag spelling, its help parser, where its flags start in the argv.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.models import GpuBudget, LaunchPlan, PlanFailure, Risk

from . import argv as argv_
from . import compat, memory
from .args import ENV_NAME, apply_arg_overrides
from .engines import registry
from .engines.base import ArgvInputs
from .explain import (
    does_not_fit,
    gpu_reason,
    kv_reason,
    other_engine_nearest,
    shared_gpu_risks,
    tp_reason,
    upgrade_nearest,
    weights_reason,
)
from .fit import (
    CONTEXT_STEP,
    MIN_USEFUL_CONTEXT,
    Engine,
    Fit,
    PlanContext,
    evaluate,
    per_gpu_budgets,
    pick_gpus,
    valid_tps,
)
from .flag_changes import fit_flags_to_build
from .flags import EngineHelp, validate_argv
from .memory import GIB, gib
from .model import round_down
from .drafter_plan import drafter_problem, drafter_reason


@dataclass
class Notes:
    """The plan's reasons and risks, filled in step by step."""

    reasons: list[str] = field(default_factory=list)
    risks: list[Risk] = field(default_factory=list)


@dataclass(frozen=True)
class Weights:
    quant_flag: str | None  # the --quantization value when quantizing online
    online_fp8: bool
    fp8_problem: str | None  # FP8 on a GPU the engine cannot run it on (refused once a fit is found)


def _check_support(ctx: PlanContext, engine: Engine, version: str | None, notes: Notes) -> PlanFailure | None:
    check = compat.check_engine(ctx.spec, ctx.asked.model, engine, version)
    if not check.ok:
        return PlanFailure(reason=check.problems[0], details=check.problems[1:], nearest=upgrade_nearest(ctx, engine))
    notes.risks += [Risk(code="old_engine", message=w) for w in check.warnings]
    notes.reasons += check.notes
    return None


def _check_mtp(ctx: PlanContext, engine: Engine, version: str | None, notes: Notes) -> PlanFailure | None:
    spec, asked = ctx.spec, ctx.asked
    heads = compat.mtp_heads(spec)
    if heads is False:
        why_not = (
            f"config.json says {spec.mtp_layers} MTP layers"
            if spec.mtp_layers == 0
            else f"{spec.architecture} checkpoints ship no MTP heads"
        )
        return PlanFailure(
            reason=f"MTP was asked, but {asked.model} has no MTP heads to draft with ({why_not})",
            nearest="start it without speculative decoding (speculative none)",
        )
    if heads is None:
        notes.risks.append(
            Risk(
                code="unknown_mtp",
                message=f"config.json of {asked.model} does not say whether the checkpoint has MTP layers "
                "(no mtp_num_hidden_layers / num_nextn_predict_layers): the engine fails at load if it has none",
            )
        )
    mtp_check = compat.check_mtp(spec, engine, version)
    if not mtp_check.ok:
        return PlanFailure(
            reason=mtp_check.problems[0],
            nearest=other_engine_nearest(ctx, engine) or "start it without speculative decoding",
        )
    notes.risks += [Risk(code="mtp_support", message=w) for w in mtp_check.warnings]
    return None


def _quantization(ctx: PlanContext, notes: Notes) -> tuple[str | None, bool] | PlanFailure:
    """(the --quantization value, quantized online) for what was asked of this checkpoint."""
    spec, asked = ctx.spec, ctx.asked
    native = spec.quantization
    if not asked.quantization:
        return None, False
    if native and (native.method == asked.quantization or (native.is_fp8 and asked.quantization == "fp8")):
        notes.reasons.append(f"Quantization: the checkpoint is already {native.method}; no flag needed.")
        return None, False
    if native:
        return PlanFailure(
            reason=f"{asked.quantization} was asked, but {asked.model} is a {native.method} checkpoint",
            nearest=f"start it as stored ({native.method})",
        )
    if asked.quantization == "fp8":
        return "fp8", True
    return PlanFailure(
        reason=f"{asked.quantization} needs a checkpoint quantized that way; {asked.model} is {spec.dtype}",
        nearest="a pre-quantized checkpoint folder, or fp8 (quantized online at load)",
    )


def _weights(ctx: PlanContext, engine: Engine, notes: Notes) -> Weights | PlanFailure:
    """Quantization and FP8 on this GPU generation."""
    quant = _quantization(ctx, notes)
    if isinstance(quant, PlanFailure):
        return quant
    quant_flag, online_fp8 = quant
    native = ctx.spec.quantization
    fp8_problem: str | None = None
    if online_fp8 or (native and native.is_fp8):
        known = [c for c in (compat.compute_capability(g) for g in ctx.facts.gpus) if c is not None]
        mode, fp8_text = compat.fp8_mode(engine, min(known) if known else None)
        if mode == "unsupported":
            fp8_problem = f"FP8 weights on {ctx.facts.gpus[0].name}: {fp8_text}"
        elif mode == "weight_only":
            moe = " (FP8 MoE on Ampere has had gaps: check the log)" if ctx.spec.is_moe else ""
            notes.risks.append(Risk(code="fp8_weight_only", severity="info", message=fp8_text + moe))
        elif mode == "unknown":
            notes.risks.append(Risk(code="fp8_unchecked", message=fp8_text))
        else:
            notes.reasons.append(f"FP8: {fp8_text}.")
    return Weights(quant_flag=quant_flag, online_fp8=online_fp8, fp8_problem=fp8_problem)


def _fits(
    ctx: PlanContext, engine: Engine, version: str | None, loaded: int, kv_dtype_bytes: int, mtp: bool
) -> tuple[Fit | None, list[Fit]]:
    """The smallest TP that fits with margin (else the first thin one), and every TP tried."""
    asked = ctx.asked
    tp_asked = asked.tp if asked.tp is not None else (len(asked.gpus) if asked.gpus else None)
    candidates = [tp_asked] if tp_asked else valid_tps(ctx.spec, len(ctx.facts.gpus))
    fits: list[Fit] = []
    for tp in candidates:
        gpus = list(asked.gpus) if asked.gpus else pick_gpus(ctx.facts, tp)
        fit = evaluate(ctx, engine, version, tp, gpus, loaded, kv_dtype_bytes, mtp)
        fits.append(fit)
        if fit.status == "margin":
            break
    chosen = next((f for f in fits if f.status == "margin"), None) or next(
        (f for f in fits if f.status == "thin"), None
    )
    return chosen, fits


def _context(ctx: PlanContext, chosen: Fit) -> tuple[int, str]:
    """The asked context, else the model's, capped to what the KV cache holds (keeping the margin)."""
    budget, spec, asked = chosen.budget, ctx.spec, ctx.asked
    kvpt = budget.kv_bytes_per_token
    model_max = spec.max_position_embeddings or MIN_USEFUL_CONTEXT
    if asked.context:
        return asked.context, (
            f"Context {asked.context} tokens, as asked: one full request uses {gib(asked.context * kvpt)} of the "
            f"{gib(budget.kv_bytes)} KV cache per GPU."
        )
    spare = int(ctx.policy.min_margin_gib * GIB) if chosen.status == "margin" else 0
    cap = round_down((budget.kv_bytes - spare) // kvpt, CONTEXT_STEP) if kvpt else model_max
    context = min(model_max, cap)
    if context < model_max:
        return context, (
            f"Context capped to {context} tokens (the model allows {model_max}): the KV cache holds "
            f"{budget.kv_tokens:,} tokens per GPU at {kvpt / 1024:.0f} KiB/token"
            + (f", and {ctx.policy.min_margin_gib:.1f} GiB is kept as margin." if spare else ".")
        )
    return context, (
        f"Context {context} tokens, the model's maximum: the KV cache holds {budget.kv_tokens:,} tokens "
        f"per GPU ({context / max(1, budget.kv_tokens):.0%} of it per full-length request)."
    )


def _explain_fit(
    ctx: PlanContext, engine: Engine, chosen: Fit, fits: list[Fit], load: tuple[int, list[str]], context: tuple[int, str],
    kv_dtype_bytes: int, mtp: bool, notes: Notes,
) -> list[GpuBudget]:
    """Per-GPU budgets, with the reasons for the TP, GPUs, fraction, context and KV, and the budget's risks."""
    loaded, load_notes = load
    per_gpu = per_gpu_budgets(ctx, engine, chosen, loaded, kv_dtype_bytes, mtp, context[0])
    margin_min = min(g.margin_bytes for g in per_gpu)
    if margin_min < int(ctx.policy.min_margin_gib * GIB):
        notes.risks.append(
            Risk(
                code="thin_margin",
                message=f"KV cache left beyond one {context[0]}-token request is {gib(margin_min)} per GPU, below the "
                f"policy's {ctx.policy.min_margin_gib:.1f} GiB: long prompts or a few concurrent requests will queue "
                "or be refused",
            )
        )
    kvpt = chosen.budget.kv_bytes_per_token
    notes.reasons += [
        weights_reason(ctx, loaded - (ctx.drafter.weights_bytes if ctx.drafter else 0), load_notes),
        drafter_reason(ctx, chosen.tp, kv_dtype_bytes),
        tp_reason(ctx, chosen, fits, engine),
        gpu_reason(ctx, chosen),
        chosen.fraction_reason,
        context[1],
        kv_reason(ctx.spec, kvpt, chosen.tp, mtp, engine, kv_dtype_bytes),
    ]
    notes.risks += shared_gpu_risks(ctx, chosen)
    notes.risks += [
        Risk(code="weights_disagree", message=n.removeprefix("warning: "))
        for n in ctx.weight_notes
        if n.startswith("warning:")
    ]
    return per_gpu


def _argv(
    ctx: PlanContext, engine: Engine, chosen: Fit, inputs: ArgvInputs, help_complete: bool, notes: Notes
) -> list[str] | PlanFailure:
    """The engine's argv, fitted to the build's flags, with the overrides and env overrides applied."""
    eng = registry.get(engine)
    built = eng.build_argv(ctx, chosen, inputs)
    if isinstance(built, PlanFailure):
        return built
    launcher, args = argv_.split(built, eng)
    args = fit_flags_to_build(engine, args, inputs.help_, help_complete, inputs.version, notes.reasons, notes.risks)
    result = apply_arg_overrides(ctx, engine, launcher + args, notes.reasons, notes.risks)
    if isinstance(result, PlanFailure):
        return result
    for key, value in ctx.overrides.env.items():
        if not ENV_NAME.match(key) or key in {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"}:
            return PlanFailure(reason=f"environment override {key!r} is not allowed (GPU choice goes through gpus)")
        inputs.env[key] = value
    return result


def _check_flags(
    ctx: PlanContext, engine: Engine, label: str, argv: list[str], help_: EngineHelp | None, loaded: int, notes: Notes
) -> PlanFailure | None:
    """Every flag checked against the build's own --help, when there is a complete one."""
    eng = registry.get(engine)
    if help_ is None:
        notes.reasons.append(f"Flags not checked: the probe did not capture {engine}'s --help on {ctx.facts.host}.")
        return None
    if not eng.help_complete(help_):
        notes.reasons.append(
            f"Flags not checked: {engine}'s --help on {ctx.facts.host} looks cut or grouped "
            f"(it lacks {', '.join(f for f in eng.core_flags if not help_.knows(f))})."
        )
        return None
    args = argv_.split(argv, eng)[1]
    problems = validate_argv(args, help_)
    if problems:
        return PlanFailure(
            reason=f"{label} does not accept: " + "; ".join(p.message for p in problems),
            details=[f"checked against {engine} --help on {ctx.facts.host}"],
            nearest=", ".join(f"{p.flag} -> {p.suggestion}" for p in problems if p.suggestion) or None,
            weights_bytes=loaded,
        )
    notes.reasons.append(f"All {len(argv_.flags_in(args))} flags checked against {label}'s own --help.")
    return None


def plan_with_engine(ctx: PlanContext, engine: Engine, version: str | None, why: str) -> LaunchPlan | PlanFailure:
    spec, asked, eng = ctx.spec, ctx.asked, registry.get(engine)
    label = compat.engine_label(engine, version)
    notes = Notes(reasons=[f"Engine: {label} ({why})."])
    mtp = asked.speculative == "mtp"
    # a release without the drafter's method is the news, before anything about the model
    failure = drafter_problem(ctx, engine, version) or _check_support(ctx, engine, version, notes)
    if failure is None and mtp:
        failure = _check_mtp(ctx, engine, version, notes)
    if failure:
        return failure
    weights = _weights(ctx, engine, notes)
    if isinstance(weights, PlanFailure):
        return weights
    help_text = ctx.facts.engine_help.get(engine)
    help_: EngineHelp | None = eng.parse_help(help_text) if help_text else None
    loaded, load_notes = memory.loaded_weight_bytes(
        spec, ctx.checkpoint_bytes, mtp_enabled=mtp, online_fp8=weights.online_fp8
    )
    draft_bytes = ctx.drafter.weights_bytes if ctx.drafter else 0
    loaded += draft_bytes  # the draft is sharded like the target: SGLang's draft worker and vLLM's default draft TP
    kv_dtype_bytes = 1 if (asked.kv_cache_dtype or "").startswith("fp8") else 2
    chosen, fits = _fits(ctx, engine, version, loaded, kv_dtype_bytes, mtp)
    if chosen is None:
        return does_not_fit(ctx, engine, fits, loaded, kv_dtype_bytes, mtp, weights.fp8_problem)
    if weights.fp8_problem:
        return PlanFailure(
            reason=weights.fp8_problem,
            nearest=other_engine_nearest(ctx, engine, "it runs FP8 weight-only (Marlin) on this GPU")
            or "a BF16 or AWQ/GPTQ (Marlin) checkpoint",
            weights_bytes=loaded,
        )
    context = _context(ctx, chosen)
    per_gpu = _explain_fit(ctx, engine, chosen, fits, (loaded, load_notes), context, kv_dtype_bytes, mtp, notes)
    trust_why = compat.needs_trust_remote_code(spec, engine, bool(ctx.facts.model and ctx.facts.model.has_custom_code))
    if trust_why:
        notes.reasons.append(f"--trust-remote-code: {trust_why}.")
    env = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": ",".join(map(str, chosen.gpus))}
    inputs = ArgvInputs(version, help_, context[0], bool(trust_why), weights.quant_flag, mtp, notes.reasons,
                        notes.risks, env)  # fmt: skip
    argv = _argv(ctx, engine, chosen, inputs, eng.help_complete(help_), notes)
    if isinstance(argv, PlanFailure):
        return argv
    failure = _check_flags(ctx, engine, label, argv, help_, loaded, notes)
    if failure:
        return failure
    notes.reasons.append(ctx.port_reason)
    return LaunchPlan(
        host=ctx.facts.host,
        model=asked.model,
        model_path=ctx.model_path,
        engine=engine,
        engine_version=version,
        tp=chosen.tp,
        gpus=chosen.gpus,
        port=ctx.port,
        argv=argv,
        env=env,
        speculative="mtp" if mtp else (ctx.drafter.kind if ctx.drafter else "none"),
        draft_model=ctx.drafter.name if ctx.drafter else None,
        draft_model_path=ctx.drafter.path if ctx.drafter else None,
        draft_weights_bytes=draft_bytes,
        context_length=context[0],
        mem_fraction=chosen.fraction,
        weights_bytes=loaded - draft_bytes,
        kv_bytes_per_token=chosen.budget.kv_bytes_per_token,
        per_gpu=per_gpu,
        fits=True,
        risks=notes.risks,
        reasons=[r for r in notes.reasons if r],
        overrides=ctx.overrides,
    )
