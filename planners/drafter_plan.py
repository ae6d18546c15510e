"""The planner's drafter steps that need an engine: is the method in the installed release, is the layout one it
accepts, and the sentence the plan gives about the drafter's memory."""

from __future__ import annotations

from bot.models import PlanFailure

from . import compat
from .engines import registry
from .explain import other_engine_nearest
from .fit import Engine, PlanContext
from .memory import gib


def drafter_problem(ctx: PlanContext, engine: Engine, version: str | None) -> PlanFailure | None:
    """The installed engine lacks the drafter's method, or the layout is one the method refuses."""
    d = ctx.drafter
    if d is None:
        return None
    eng = registry.get(engine)
    help_text = ctx.facts.engine_help.get(engine)
    problem = eng.drafter_problem(d.kind, version, eng.parse_help(help_text) if help_text else None,
                                  list(ctx.overrides.extra_args))
    if problem is None:
        return None
    return PlanFailure(
        reason=problem,
        nearest=other_engine_nearest(ctx, engine) or f"upgrade {compat.engine_name(engine)}, or start it with MTP",
    )


def drafter_reason(ctx: PlanContext, tp: int, kv_dtype_bytes: int) -> str:
    """What the drafter adds to each GPU ("" without one)."""
    d = ctx.drafter
    if d is None:
        return ""
    return (
        f"Drafter: {d.label} adds {gib(d.weights_bytes)} of weights ({gib(d.weights_bytes // tp)} per GPU at TP {tp}) "
        f"and {ctx.draft_kv(tp, kv_dtype_bytes) / 1024:.0f} KiB of KV per token per GPU for its own layers, both "
        "counted in the budget."
    )
