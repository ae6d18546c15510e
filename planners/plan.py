"""The planner: DeployRequest + HostFacts -> LaunchPlan (exact argv, env, per-GPU budget, risks, reasons) or a
PlanFailure that says why with numbers and the nearest plan that would work. Pure: no I/O.

Choices, in order: engine (asked, else installed and compatible; SGLang first when both are), MTP and FP8 checks,
port, then the smallest TP that fits with margin on the least-used GPUs (fit.py), the memory fraction (the engine's
own default, raised or lowered only when needed), the context (asked, else the model's, capped to what KV holds),
hybrid-model settings, the argv (args.py), and finally every flag checked against the engine's own --help.
"""

from __future__ import annotations

from bot.config import AppConfig, HostConfig, Policy
from bot.models import DeployRequest, HostFacts, LaunchPlan, PlanFailure, PlanOverrides, Risk

from . import compat, memory
from .engines import registry
from .engines.sglang import flags as sglang
from .engines.vllm import flags as vllm
from .args import ENV_NAME, apply_arg_overrides, sglang_argv, vllm_argv
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
    Asked,
    Engine,
    Fit,
    PlanContext,
    evaluate,
    per_gpu_budgets,
    pick_gpus,
    tp_problem,
    valid_tps,
)
from .flag_changes import fit_flags_to_build
from .flags import EngineHelp, flags_in, parse_help, validate_argv
from .flags import suggest_flag as suggest_flag  # re-exported: part of the planner's public API
from .memory import GIB, gib
from .model import ConfigError, ModelSpec, model_spec, round_down


def make_plan(
    request: DeployRequest,
    facts: HostFacts,
    host: HostConfig,
    policy: Policy,
    overrides: PlanOverrides | None = None,
) -> LaunchPlan | PlanFailure:
    overrides = overrides or PlanOverrides()
    if not request.model:
        return PlanFailure(reason="no model named: say which model to start")
    asked = _asked(request, overrides)
    folder = facts.model
    if folder is None or not folder.exists or folder.name != request.model:
        available = ", ".join(facts.models_available[:12]) or "none found"
        return PlanFailure(
            reason=f"no model folder {request.model} under {host.models_dir} on {facts.host}",
            nearest=f"models on {facts.host}: {available}",
        )
    if folder.config is None:
        return PlanFailure(reason=f"could not read {folder.path}/config.json: {folder.config_error or 'missing'}")
    try:
        spec = model_spec(folder.config)
    except ConfigError as exc:
        return PlanFailure(reason=f"{folder.path}/config.json: {exc}")
    if not facts.gpus:
        return PlanFailure(reason=f"no GPU seen on {facts.host}: {facts.gpu_error or 'the probe found none'}")
    problem = _check_asked_values(asked, spec, facts)
    if problem:
        return problem
    checkpoint, weight_notes = memory.weight_bytes(spec, folder)
    port = _choose_port(asked.port, facts, policy)
    if isinstance(port, PlanFailure):
        return port
    ctx = PlanContext(
        request=request,
        facts=facts,
        host=host,
        policy=policy,
        overrides=overrides,
        asked=asked,
        spec=spec,
        model_path=folder.path,
        checkpoint_bytes=checkpoint,
        weight_notes=weight_notes,
        port=port[0],
        port_reason=port[1],
    )
    engines = _engine_order(ctx)
    if isinstance(engines, PlanFailure):
        return engines
    failures: list[tuple[str, PlanFailure]] = []
    for engine, version, why in engines:
        result = _plan_with_engine(ctx, engine, version, why)
        if isinstance(result, LaunchPlan):
            if failures:
                skipped = "; ".join(f"{compat.engine_name(e)}: {f.reason}" for e, f in failures)
                result = result.model_copy(update={"reasons": [f"Not the other engine: {skipped}"] + result.reasons})
            return result
        failures.append((engine, result))
    first = failures[0][1]
    if len(failures) == 1:
        return first
    others = [f"{compat.engine_name(e)}: {f.reason}" for e, f in failures[1:]]
    nearest = next((f.nearest for _, f in failures if f.nearest), None)
    return first.model_copy(update={"details": first.details + others, "nearest": nearest})


def choose_host(
    request: DeployRequest, facts_by_host: dict[str, HostFacts], config: AppConfig
) -> tuple[str, LaunchPlan, str] | PlanFailure:
    """ "start X anywhere": the host where it fits with the most margin on idle GPUs, and a sentence saying why."""
    plans: list[tuple[str, LaunchPlan]] = []
    refused: list[str] = []
    nearest: list[str] = []
    for name, facts in facts_by_host.items():
        host = config.hosts.get(name)
        if host is None:
            continue
        if facts.model is None or not facts.model.exists or facts.model.name != request.model:
            refused.append(f"{name}: no {request.model} folder")
            continue
        result = make_plan(request.model_copy(update={"host": name}), facts, host, config.policy)
        if isinstance(result, LaunchPlan):
            plans.append((name, result))
        else:
            refused.append(f"{name}: {result.reason}")
            if result.nearest:
                nearest.append(f"{name}: {result.nearest}")
    if not plans:
        return PlanFailure(
            reason=f"{request.model} fits on none of the {len(facts_by_host)} hosts probed",
            details=refused,
            nearest="; ".join(nearest) or None,
        )

    def score(item: tuple[str, LaunchPlan]) -> tuple[int, int, int]:
        plan = item[1]
        idle = not any(r.code == "shared_gpu" for r in plan.risks)
        margin = min((g.margin_bytes for g in plan.per_gpu), default=0)
        return (1 if idle else 0, margin, -plan.tp)

    plans.sort(key=score, reverse=True)
    best_name, best = plans[0]
    margin = min((g.margin_bytes for g in best.per_gpu), default=0)
    idle = "idle " if score(plans[0])[0] else "shared "
    gpus = ",".join(str(g) for g in best.gpus)
    others = [f"{n}: {gib(min((g.margin_bytes for g in p.per_gpu), default=0))}" for n, p in plans[1:]]
    others += refused
    why = (
        f"{best_name}: {request.model} fits at TP {best.tp} on {idle}GPU{'s' if len(best.gpus) > 1 else ''} {gpus} "
        f"with {gib(margin)} of KV cache to spare per GPU beyond a {best.context_length}-token request, the most of "
        f"{len(facts_by_host)} host{'s' if len(facts_by_host) != 1 else ''}"
        + (f" ({'; '.join(others)})" if others else "")
        + "."
    )
    return best_name, best, why


def _asked(request: DeployRequest, o: PlanOverrides) -> Asked:
    return Asked(
        model=request.model or "",
        tp=o.tp if o.tp is not None else request.tp,
        gpus=o.gpus if o.gpus is not None else request.gpus,
        port=o.port if o.port is not None else request.port,
        engine=o.engine or request.engine,
        speculative=o.speculative or request.speculative or "none",
        context=o.context_length if o.context_length is not None else request.context_length,
        quantization=(o.quantization or request.quantization or None),
        kv_cache_dtype=o.kv_cache_dtype,
        mem_fraction=o.mem_fraction,
        max_running_requests=o.max_running_requests,
        cuda_graph_max_bs=o.cuda_graph_max_bs,
        disable_cuda_graph=bool(o.disable_cuda_graph),
    )


def _check_asked_values(asked: Asked, spec: ModelSpec, facts: HostFacts) -> PlanFailure | None:
    n = len(facts.gpus)
    indices = [g.index for g in facts.gpus]
    if asked.gpus is not None:
        missing = [i for i in asked.gpus if i not in indices]
        if missing or len(set(asked.gpus)) != len(asked.gpus) or not asked.gpus:
            return PlanFailure(
                reason=f"GPU {', '.join(map(str, missing)) or 'list'} not valid on {facts.host} "
                f"(it has GPUs {', '.join(map(str, indices))})",
                nearest=f"pick from GPUs {', '.join(map(str, indices))}",
            )
        if asked.tp is not None and asked.tp != len(asked.gpus):
            return PlanFailure(
                reason=f"TP {asked.tp} asked on {len(asked.gpus)} GPUs ({', '.join(map(str, asked.gpus))}): "
                "TP uses exactly one GPU per rank",
                nearest=f"TP {len(asked.gpus)} on those GPUs, or name {asked.tp} GPUs",
            )
    tp = asked.tp if asked.tp is not None else (len(asked.gpus) if asked.gpus else None)
    if tp is not None:
        problem = tp_problem(spec, tp)
        if problem:
            near = valid_tps(spec, 2 * max(n, tp))
            below = [t for t in near if t < tp][-1:]
            above = [t for t in near if t > tp][:1]
            closest = below + above
            over = [t for t in closest if t > n]
            return PlanFailure(
                reason=f"{problem} of {asked.model}",
                details=[f"TP {t} needs {t} GPUs; {facts.host} has {n}" for t in over],
                nearest=f"TP {' or '.join(map(str, closest))}" if closest else None,
            )
        if tp > n:
            return PlanFailure(
                reason=f"TP {tp} needs {tp} GPUs; {facts.host} has {n}",
                nearest=f"TP {max(valid_tps(spec, n) or [1])} on {facts.host}, or a host with {tp} GPUs",
            )
    model_max = spec.max_position_embeddings
    if asked.context is not None and model_max and asked.context > model_max:
        return PlanFailure(
            reason=f"{asked.model} supports {model_max} tokens of context (max_position_embeddings); "
            f"{asked.context} was asked",
            nearest=f"context {model_max}",
        )
    return None


def _choose_port(asked: int | None, facts: HostFacts, policy: Policy) -> tuple[int, str] | PlanFailure:
    used = set(facts.listening_ports)
    servers = {p.server.port: p for p in facts.gpu_processes if p.server and p.server.port}
    used |= set(servers)
    low, high = policy.port_range
    free = next((p for p in range(low, high + 1) if p not in used), None)
    if asked is not None:
        if asked in used:
            owner = servers.get(asked)
            by = f" by {owner.server.engine} serving {owner.server.model_path}" if owner and owner.server else ""
            return PlanFailure(
                reason=f"port {asked} is already in use on {facts.host}{by}",
                nearest=f"port {free} is free" if free else None,
            )
        return asked, f"Port {asked}, as asked (free on {facts.host})."
    if free is None:
        return PlanFailure(reason=f"no free port in {low}-{high} on {facts.host}")
    return free, f"Port {free}: the first free one in {low}-{high} on {facts.host}."


def _engine_order(ctx: PlanContext) -> list[tuple[Engine, str | None, str]] | PlanFailure:
    installed = {name: install for name, install in ctx.facts.engines.items() if registry.is_engine(name)}
    usable = {name: inst for name, inst in installed.items() if not inst.error}
    asked = ctx.asked.engine
    if asked:
        if asked not in installed:
            others = ", ".join(compat.engine_label(n, i.version) for n, i in usable.items())
            return PlanFailure(
                reason=f"{compat.engine_name(asked)} is not installed in {ctx.host.python}'s "
                f"environment on {ctx.facts.host}",
                nearest=f"use the installed {others}" if others else None,
            )
        if installed[asked].error:
            return PlanFailure(
                reason=f"{asked} is installed on {ctx.facts.host} but does not import: {installed[asked].error}",
            )
        return [(asked, installed[asked].version, "as asked")]
    if not usable:
        broken = "; ".join(f"{n}: {i.error}" for n, i in installed.items())
        labels = [registry.label(n) for n in registry.names()]
        known = " nor ".join(labels) if len(labels) == 2 else ", ".join(labels[:-1]) + " nor " + labels[-1]
        return PlanFailure(
            reason=f"neither {known} is usable in {ctx.host.python}'s environment on {ctx.facts.host}"
            + (f" ({broken})" if broken else ""),
        )
    both = len(usable) > 1
    return [
        (
            name,
            usable[name].version,
            f"installed; {registry.label(name)} is preferred when both are"
            if both and name == registry.names()[0]
            else "installed",
        )
        for name in registry.names()
        if name in usable
    ]


def _plan_with_engine(ctx: PlanContext, engine: Engine, version: str | None, why: str) -> LaunchPlan | PlanFailure:
    spec, asked = ctx.spec, ctx.asked
    label = compat.engine_label(engine, version)
    risks: list[Risk] = []
    reasons: list[str] = [f"Engine: {label} ({why})."]

    check = compat.check_engine(spec, asked.model, engine, version)
    if not check.ok:
        return PlanFailure(reason=check.problems[0], details=check.problems[1:], nearest=upgrade_nearest(ctx, engine))
    risks += [Risk(code="old_engine", message=w) for w in check.warnings]
    reasons += check.notes

    mtp = asked.speculative == "mtp"
    if mtp:
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
            risks.append(
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
        risks += [Risk(code="mtp_support", message=w) for w in mtp_check.warnings]

    # quantization and FP8 on this GPU generation
    native = spec.quantization
    quant_flag: str | None = None
    online_fp8 = False
    if asked.quantization:
        if native and (native.method == asked.quantization or (native.is_fp8 and asked.quantization == "fp8")):
            reasons.append(f"Quantization: the checkpoint is already {native.method}; no flag needed.")
        elif native:
            return PlanFailure(
                reason=f"{asked.quantization} was asked, but {asked.model} is a {native.method} checkpoint",
                nearest=f"start it as stored ({native.method})",
            )
        elif asked.quantization == "fp8":
            online_fp8, quant_flag = True, "fp8"
        else:
            return PlanFailure(
                reason=f"{asked.quantization} needs a checkpoint quantized that way; {asked.model} is {spec.dtype}",
                nearest="a pre-quantized checkpoint folder, or fp8 (quantized online at load)",
            )
    fp8_problem: str | None = None
    if online_fp8 or (native and native.is_fp8):
        ccs = [compat.compute_capability(g) for g in ctx.facts.gpus]
        known = [c for c in ccs if c is not None]
        mode, fp8_text = compat.fp8_mode(engine, min(known) if known else None)
        if mode == "unsupported":
            fp8_problem = f"FP8 weights on {ctx.facts.gpus[0].name}: {fp8_text}"
        elif mode == "weight_only":
            moe = " (FP8 MoE on Ampere has had gaps: check the log)" if spec.is_moe else ""
            risks.append(Risk(code="fp8_weight_only", severity="info", message=fp8_text + moe))
        elif mode == "unknown":
            risks.append(Risk(code="fp8_unchecked", message=fp8_text))
        else:
            reasons.append(f"FP8: {fp8_text}.")

    help_text = ctx.facts.engine_help.get(engine)
    help_: EngineHelp | None = parse_help(help_text) if help_text else None
    core = sglang.CORE_FLAGS if engine == "sglang" else vllm.CORE_FLAGS
    help_complete = bool(help_ and help_.looks_complete(core))

    loaded, load_notes = memory.loaded_weight_bytes(spec, ctx.checkpoint_bytes, mtp_enabled=mtp, online_fp8=online_fp8)
    kv_dtype_bytes = 1 if (asked.kv_cache_dtype or "").startswith("fp8") else 2

    # ----- TP and GPUs
    tp_asked = asked.tp if asked.tp is not None else (len(asked.gpus) if asked.gpus else None)
    candidates = [tp_asked] if tp_asked else valid_tps(spec, len(ctx.facts.gpus))
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
    if chosen is None:
        return does_not_fit(ctx, engine, fits, loaded, kv_dtype_bytes, mtp, fp8_problem)
    if fp8_problem:
        return PlanFailure(
            reason=fp8_problem,
            nearest=other_engine_nearest(ctx, engine, "it runs FP8 weight-only (Marlin) on this GPU")
            or "a BF16 or AWQ/GPTQ (Marlin) checkpoint",
            weights_bytes=loaded,
        )

    # ----- context
    budget = chosen.budget
    margin_bytes = int(ctx.policy.min_margin_gib * GIB)
    model_max = spec.max_position_embeddings or MIN_USEFUL_CONTEXT
    kvpt = budget.kv_bytes_per_token
    if asked.context:
        context = asked.context
        context_reason = (
            f"Context {context} tokens, as asked: one full request uses {gib(context * kvpt)} of the "
            f"{gib(budget.kv_bytes)} KV cache per GPU."
        )
    else:
        spare = margin_bytes if chosen.status == "margin" else 0
        cap = round_down((budget.kv_bytes - spare) // kvpt, CONTEXT_STEP) if kvpt else model_max
        context = min(model_max, cap)
        if context < model_max:
            context_reason = (
                f"Context capped to {context} tokens (the model allows {model_max}): the KV cache holds "
                f"{budget.kv_tokens:,} tokens per GPU at {kvpt / 1024:.0f} KiB/token"
                + (f", and {ctx.policy.min_margin_gib:.1f} GiB is kept as margin." if spare else ".")
            )
        else:
            context_reason = (
                f"Context {context} tokens, the model's maximum: the KV cache holds {budget.kv_tokens:,} tokens "
                f"per GPU ({context / max(1, budget.kv_tokens):.0%} of it per full-length request)."
            )

    per_gpu = per_gpu_budgets(ctx, engine, chosen, loaded, kv_dtype_bytes, mtp, context)
    margin_min = min(g.margin_bytes for g in per_gpu)
    if margin_min < margin_bytes:
        risks.append(
            Risk(
                code="thin_margin",
                message=f"KV cache left beyond one {context}-token request is {gib(margin_min)} per GPU, below the "
                f"policy's {ctx.policy.min_margin_gib:.1f} GiB: long prompts or a few concurrent requests will queue "
                "or be refused",
            )
        )

    reasons.append(weights_reason(ctx, loaded, load_notes))
    reasons.append(tp_reason(ctx, chosen, fits, engine))
    reasons.append(gpu_reason(ctx, chosen))
    reasons.append(chosen.fraction_reason)
    reasons.append(context_reason)
    reasons.append(kv_reason(spec, kvpt, chosen.tp, mtp, engine, kv_dtype_bytes))
    risks += shared_gpu_risks(ctx, chosen)
    for note in ctx.weight_notes:
        if note.startswith("warning:"):
            risks.append(Risk(code="weights_disagree", message=note.removeprefix("warning: ")))

    # ----- flags
    trust_why = compat.needs_trust_remote_code(spec, engine, bool(ctx.facts.model and ctx.facts.model.has_custom_code))
    if trust_why:
        reasons.append(f"--trust-remote-code: {trust_why}.")
    env = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": ",".join(map(str, chosen.gpus))}
    if engine == "sglang":
        argv = sglang_argv(ctx, chosen, version, help_, context, bool(trust_why), quant_flag, mtp, reasons, risks, env)
    else:
        argv = vllm_argv(ctx, chosen, version, help_, context, bool(trust_why), quant_flag, mtp, reasons, risks)
    if isinstance(argv, PlanFailure):
        return argv
    argv = argv[:3] + fit_flags_to_build(engine, argv[3:], help_, help_complete, version, reasons, risks)

    argv = apply_arg_overrides(ctx, engine, argv, reasons, risks)
    if isinstance(argv, PlanFailure):
        return argv
    for key, value in ctx.overrides.env.items():
        if not ENV_NAME.match(key) or key in {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"}:
            return PlanFailure(reason=f"environment override {key!r} is not allowed (GPU choice goes through gpus)")
        env[key] = value

    if help_ is None:
        reasons.append(f"Flags not checked: the probe did not capture {engine}'s --help on {ctx.facts.host}.")
    elif not help_complete:
        reasons.append(
            f"Flags not checked: {engine}'s --help on {ctx.facts.host} looks cut or grouped "
            f"(it lacks {', '.join(f for f in core if not help_.knows(f))})."
        )
    else:
        problems = validate_argv(argv[3:], help_)
        if problems:
            return PlanFailure(
                reason=f"{label} does not accept: " + "; ".join(p.message for p in problems),
                details=[f"checked against {engine} --help on {ctx.facts.host}"],
                nearest=", ".join(f"{p.flag} -> {p.suggestion}" for p in problems if p.suggestion) or None,
                weights_bytes=loaded,
            )
        reasons.append(f"All {len(flags_in(argv[3:]))} flags checked against {label}'s own --help.")
    reasons.append(ctx.port_reason)

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
        speculative="mtp" if mtp else "none",
        context_length=context,
        mem_fraction=chosen.fraction,
        weights_bytes=loaded,
        kv_bytes_per_token=kvpt,
        per_gpu=per_gpu,
        fits=True,
        risks=risks,
        reasons=[r for r in reasons if r],
        overrides=ctx.overrides,
    )


__all__ = ["make_plan", "choose_host", "suggest_flag", "valid_tps", "tp_problem"]
