"""After ready (issue 16, item 4): how well a speculative plan's drafter is doing, measured by the engine itself.

The accept length and acceptance rate come from the engine's own decode log line when one was seen before ready
(SGLang: "accept len: 1.64, accept rate: 0.64"; vLLM's SpecDecoding metrics line; read by the log dialects in
planners/engines/<name>/logs.py), else from its /metrics (bot/engine_figures.py: sglang:spec_accept_length /
spec_accept_rate, vLLM's accepted / drafted token counters). What the drafter's own config promised is named when
it says: a DFlash drafter's block_size is the most tokens one step can accept.
"""

from __future__ import annotations

from bot.engine_figures import EngineFigures
from bot.logevents import DecodeStats
from bot.models import LaunchPlan, ModelFolder
from planners.drafters import KIND_LABEL, Drafter, read_drafter


def _what(plan: LaunchPlan) -> str:
    if plan.speculative == "mtp":
        return "Stock MTP"
    label = KIND_LABEL.get(plan.speculative, "drafter")
    return f"{label[0].upper()}{label[1:]} {plan.draft_model or ''}".rstrip()


def promised(folder: ModelFolder | None) -> str | None:
    """What the drafter's config says it can do, when it says (a DFlash block: the most accepted per step)."""
    drafter = read_drafter(folder) if folder else None
    if isinstance(drafter, Drafter) and drafter.kind == "dflash" and drafter.block_size:
        return f"at most {drafter.block_size} per step by its config's block_size"
    return None


def speculation_line(
    plan: LaunchPlan, decode: DecodeStats | None, figures: EngineFigures | str | None, folder: ModelFolder | None
) -> str | None:
    """One line for the thread, or None for a plan that does not speculate."""
    if plan.speculative == "none":
        return None
    length = rate = None
    source = "the engine's decode log line"
    if decode is not None and (decode.accept_len is not None or decode.accept_rate is not None):
        length, rate = decode.accept_len, decode.accept_rate
    elif isinstance(figures, EngineFigures):
        length, rate, source = figures.accept_length, figures.accept_rate, "the engine's /metrics"
    if length is None and rate is None:
        why = f" ({figures})" if isinstance(figures, str) else ""
        return f"{_what(plan)}: no accept figures yet; the engine reports them once it decodes{why}."
    parts = [f"accept length {length:.2f}" if length is not None else None,
             f"acceptance rate {rate:.0%}" if rate is not None else None]  # fmt: skip
    ceiling = promised(folder)
    return (f"{_what(plan)}: " + ", ".join(p for p in parts if p) + (f" ({ceiling})" if ceiling else "")
            + f", measured from {source}.")  # fmt: skip
