"""The plan's words for flags fitted to the build (planners/flag_resolve.py): a reason for each rename, a risk for
each flag dropped, so nothing leaves the launch line unsaid."""

from __future__ import annotations

from bot.models import Risk

from .flag_resolve import fit_to_build
from .flags import EngineHelp


def fit_flags_to_build(
    engine: str,
    args: list[str],
    help_: EngineHelp | None,
    help_complete: bool,
    version: str | None,
    reasons: list[str],
    risks: list[Risk],
) -> list[str]:
    adapted, changes, source = fit_to_build(engine, args, help_, help_complete, version)
    for change in changes:
        if change.dropped:
            risks.append(
                Risk(
                    code="flag_dropped",
                    message=f"{change.describe()} (by {source}); the launch goes on without it",
                )
            )
        else:
            reasons.append(f"Flag for this build: {change.describe()} (by {source}).")
    return adapted
