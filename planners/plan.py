"""The planner: DeployRequest + HostFacts -> LaunchPlan (exact argv, env, per-GPU budget, risks, reasons) or a
PlanFailure that says why with numbers and the nearest plan that would work. Pure: no I/O.

Choices, in order: engine (asked, else installed and compatible; the registry's order decides between several), MTP and FP8 checks,
port, then the smallest TP that fits with margin on the least-used GPUs (fit.py), the memory fraction (the engine's
own default, raised or lowered only when needed), the context (asked, else the model's, capped to what KV holds),
hybrid-model settings, the engine's argv, and finally every flag checked against the engine's own --help
(plan_engine.py; every engine-specific step is the engine's, planners/engines/).
"""

from __future__ import annotations

from bot.config import AppConfig, HostConfig, Policy
from bot.host_facts import ModelFolder
from bot.models import DRAFTER_KINDS, DeployRequest, HostFacts, LaunchPlan, PlanFailure, PlanOverrides, Risk

from . import compat, memory
from .drafters import KIND_LABEL, Drafter, choose_drafter, drafter_kind, is_dedicated
from .engines import registry
from .fit import Asked, Engine, PlanContext, tp_problem, valid_tps
from .flags import suggest_flag as suggest_flag  # re-exported: part of the planner's public API
from .memory import gib
from .model import ConfigError, ModelSpec, model_spec
from .plan_engine import plan_with_engine


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
    folder = _servable_folder(request, facts, host)
    if isinstance(folder, PlanFailure):
        return folder
    try:
        spec = model_spec(folder.config or {})
    except ConfigError as exc:
        return PlanFailure(reason=f"{folder.path}/config.json: {exc}")
    if not facts.gpus:
        return PlanFailure(reason=f"no GPU seen on {facts.host}: {facts.gpu_error or 'the probe found none'}")
    problem = _check_asked_values(asked, spec, facts)
    if problem:
        return problem
    checkpoint, weight_notes = memory.weight_bytes(spec, folder)
    if asked.speculative == "ngram":  # in the request's vocabulary (issue 16), not planned yet: never dropped
        return PlanFailure(reason="n-gram speculation is not planned yet", nearest="with MTP, or with a drafter")
    drafter = _drafter_asked(asked, request, spec, facts, host)
    if isinstance(drafter, PlanFailure):
        return drafter
    port = _choose_port(asked.port, facts, policy)
    if isinstance(port, PlanFailure):
        return port
    ctx = PlanContext(
        drafter=drafter,
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
    return _first_engine_that_plans(ctx, engines)


def _drafter_asked(
    asked: Asked, request: DeployRequest, spec: ModelSpec, facts: HostFacts, host: HostConfig
) -> Drafter | PlanFailure | None:
    """The drafter a drafter-kind speculation asked for (or why none serves), None when none was asked."""
    if asked.speculative not in DRAFTER_KINDS:
        return None
    return choose_drafter(
        asked.speculative, request.draft_model, asked.model, spec, facts.drafters,
        host.drafter_names(asked.model), facts.host,
    )  # fmt: skip


def _servable_folder(request: DeployRequest, facts: HostFacts, host: HostConfig) -> ModelFolder | PlanFailure:
    """The probed model folder, or why it cannot be planned: absent, another folder, no readable config, a drafter."""
    folder = facts.model
    if folder is None or not folder.exists or folder.name != request.model:
        available = ", ".join(facts.models_available[:12]) or "none found"
        return PlanFailure(
            reason=f"no model folder {request.model} under {host.models_dir} on {facts.host}",
            nearest=f"models on {facts.host}: {available}",
        )
    if folder.config is None:
        return PlanFailure(reason=f"could not read {folder.path}/config.json: {folder.config_error or 'missing'}")
    if is_dedicated(folder.config):
        kind = drafter_kind(folder.config) or "drafter"
        return PlanFailure(
            reason=f"{request.model} is a {KIND_LABEL.get(kind, kind)} (by its config.json): it drafts for another "
            "model and is not served on its own",
            nearest=f"start its target model 'with {kind} drafter {request.model}'",
        )
    return folder


def _first_engine_that_plans(
    ctx: PlanContext, engines: list[tuple[Engine, str | None, str]]
) -> LaunchPlan | PlanFailure:
    """The first engine in order that gives a plan, saying why the ones before it did not; else every refusal."""
    failures: list[tuple[str, PlanFailure]] = []
    for engine, version, why in engines:
        result = plan_with_engine(ctx, engine, version, why)
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


__all__ = ["make_plan", "choose_host", "suggest_flag", "valid_tps", "tp_problem"]
