"""Advice that keeps speculative decoding when the engine's own error says how.

SGLang refuses MTP on a hybrid (Mamba / Gated DeltaNet) model whose radix cache uses the no_buffer mamba strategy:
"Speculative decoding for X is not compatible with radix cache when using --mamba-scheduler-strategy no_buffer.
To use radix cache with speculative decoding, please use --mamba-scheduler-strategy extra_buffer and set
SGLANG_ENABLE_SPEC_V2=1." (sglang/srt/server_args.py, 0.5.9-0.5.11; reproduced by tools/engine_check.py). The fix
is what the message asks, spelled as the host's build spells it (the planner's own choice, planners/engines/sglang/flags.py:
--mamba-scheduler-strategy, or --mamba-radix-cache-strategy on 0.5.2x, or --disable-radix-cache when the build has
neither), so the relaunch keeps the MTP the person asked for.
"""

from __future__ import annotations

import re

from bot.models import Fix, HostFacts, LaunchPlan, PlanOverrides
from planners.engines.sglang import flags as sglang_flags
from planners.flags import parse_help

RADIX_WITH_SPEC = re.compile(
    r"not compatible with radix cache when using (--mamba[-_](?:scheduler|radix[-_]cache)[-_]strategy) no_buffer",
    re.IGNORECASE,
)


def keep_mtp_for_radix_cache(
    text: str, plan: LaunchPlan | None, facts: HostFacts | None
) -> tuple[list[str], Fix] | None:
    """(next steps, fix) for SGLang's radix-cache / speculative-decoding refusal; None for any other error."""
    match = RADIX_WITH_SPEC.search(text)
    if not match:
        return None
    help_text = facts.engine_help.get("sglang") if facts else None
    version = plan.engine_version if plan else None
    if help_text or version:
        args, why = sglang_flags.mamba_strategy_args(parse_help(help_text) if help_text else None, version)
    else:  # nothing known of the build: the spelling the engine's own message used
        args, why = [match.group(1).replace("_", "-"), "extra_buffer"], "as the engine's message spells it"
    env = {"SGLANG_ENABLE_SPEC_V2": "1"}
    if plan is not None and _has_run(plan.argv, args) and plan.env.get("SGLANG_ENABLE_SPEC_V2") == "1":
        return None  # this launch already did what the message asks: keeping MTP this way did not work
    change = " ".join(args) + " and SGLANG_ENABLE_SPEC_V2=1"
    steps = [
        f"the engine says how to keep speculative decoding on this hybrid model: relaunch with {change} ({why}); "
        "MTP stays on",
    ]
    if args == ["--disable-radix-cache"]:
        steps.append("this build has no extra_buffer strategy: prefix caching is turned off instead, MTP stays on")
    return steps, Fix(
        summary=f"keep MTP: {change}",
        overrides=PlanOverrides(speculative="mtp", extra_args=args, env=env),
    )


def _has_run(argv: list[str], args: list[str]) -> bool:
    """Whether `args` (a flag and its values) appear together in `argv`."""
    return any(argv[i:i + len(args)] == args for i in range(len(argv)))
