"""The argv and env of a plan after the engine wrote its flags: the overrides (extra / removed args, env)."""

from __future__ import annotations

import re

from bot.models import PlanFailure, Risk

from . import argv as argv_
from .engines import registry
from .fit import PlanContext

ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,63}$")


def _remove(
    ctx: PlanContext, engine: str, argv: list[str], reasons: list[str], risks: list[Risk]
) -> list[str] | PlanFailure:
    owned = registry.get(engine).owned_flags
    protected = [a for a in ctx.overrides.remove_args if a in owned]
    if protected:
        return PlanFailure(
            reason=f"cannot remove {', '.join(protected)}: the plan needs it (change the matching field instead)"
        )
    argv, removed = argv_.remove(argv, ctx.overrides.remove_args)
    if removed:
        reasons.append(f"Removed as asked: {' '.join(removed)}.")
    risks += registry.get(engine).removal_risks(removed, ctx.asked.speculative == "mtp")
    return argv


def _extra(ctx: PlanContext, engine: str, argv: list[str], reasons: list[str]) -> list[str] | PlanFailure:
    eng = registry.get(engine)
    extra = list(ctx.overrides.extra_args)
    owned = [flag for _, flag, _ in argv_.flags_in(extra) if flag in eng.owned_flags]
    if owned:
        return PlanFailure(
            reason=f"extra argument {owned[0]} conflicts with the plan's own; use the "
            "override field for it (tp, port, context_length, mem_fraction)"
        )
    present = {flag for _, flag, _ in argv_.flags_in(argv_.split(argv, eng)[1])}
    dupes = [flag for _, flag, _ in argv_.flags_in(extra) if flag in present]
    if dupes:
        argv, _ = argv_.remove(argv, dupes)
        reasons.append(f"Replaced by the extra arguments: {' '.join(dupes)}.")
    reasons.append(f"Extra arguments: {' '.join(extra)}.")
    return argv + extra


def apply_arg_overrides(
    ctx: PlanContext, engine: str, argv: list[str], reasons: list[str], risks: list[Risk]
) -> list[str] | PlanFailure:
    result: list[str] | PlanFailure = argv
    if ctx.overrides.remove_args:
        result = _remove(ctx, engine, argv, reasons, risks)
    if ctx.overrides.extra_args and not isinstance(result, PlanFailure):
        result = _extra(ctx, engine, result, reasons)
    return result
