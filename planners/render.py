"""Plain-text renderings of a LaunchPlan and a PlanFailure, for the console and Slack (figures in GiB, 1 decimal)."""

from __future__ import annotations

import shlex

from bot.models import GIB, LaunchPlan, PlanFailure

from .engines import registry



def _gib(value: int | float) -> str:
    return f"{value / GIB:.1f} GiB"


def command_line(plan: LaunchPlan) -> str:
    """The launch command exactly as the host would run it (env first), quoted for a POSIX shell."""
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(plan.env.items()))
    return (env + " " if env else "") + shlex.join(plan.argv)


def plan_text(plan: LaunchPlan) -> str:
    engine = registry.label(plan.engine)
    version = f" {plan.engine_version}" if plan.engine_version else ""
    gpus = ("GPUs " if len(plan.gpus) > 1 else "GPU ") + ",".join(map(str, plan.gpus))
    lines = [
        f"Plan: {plan.model} on {plan.host} with {engine}{version}, TP {plan.tp} on {gpus}, port {plan.port}",
        f"  weights {_gib(plan.weights_bytes)} in all; KV {plan.kv_bytes_per_token / 1024:.1f} KiB/token per GPU; "
        f"context {plan.context_length}; speculative {plan.speculative}"
        + (f"; memory fraction {plan.mem_fraction:.3g}" if plan.mem_fraction is not None else ""),
    ]
    if plan.per_gpu:
        lines.append("  per GPU:")
        for g in plan.per_gpu:
            lines.append(
                f"    GPU {g.gpu_index}: {_gib(g.total_bytes)} total, {_gib(g.free_bytes)} free; weights "
                f"{_gib(g.weights_bytes)}, state/overhead {_gib(g.overhead_bytes)}, KV {_gib(g.kv_bytes)} "
                f"({g.kv_tokens:,} tokens), margin {_gib(g.margin_bytes)}"
            )
    if plan.risks:
        lines.append("  risks:")
        lines += [f"    [{r.severity}] {r.code}: {r.message}" for r in plan.risks]
    if plan.reasons:
        lines.append("  why:")
        lines += [f"    - {r}" for r in plan.reasons]
    lines.append("  command:")
    lines.append(f"    {command_line(plan)}")
    return "\n".join(lines)


def failure_text(failure: PlanFailure) -> str:
    lines = [f"Cannot plan: {failure.reason}"]
    if failure.weights_bytes:
        lines.append(f"  weights: {_gib(failure.weights_bytes)}")
    lines += [f"  - {d}" for d in failure.details]
    lines += [f"  [{r.severity}] {r.code}: {r.message}" for r in failure.risks]
    if failure.nearest:
        lines.append(f"  nearest that would work: {failure.nearest}")
    return "\n".join(lines)
