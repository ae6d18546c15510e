"""SGLang's flags for a separate drafter: DFLASH, EAGLE3, STANDALONE with ``--speculative-draft-model-path``.

From SGLang 0.5.11's own source (server_args.py, the release's wheel; the captured parser is
bot/simhost/enginehelp/sglang-0.5.11.json):
* ``--speculative-algorithm`` choices are ``DFLASH, EAGLE, EAGLE3, NEXTN, STANDALONE, NGRAM`` (0.5.9's lack DFLASH);
* DFLASH "requires setting --speculative-draft-model-path", raises "Currently DFLASH speculative decoding only
  supports pp_size == 1" and "... does not support dp attention", forces speculative_num_steps and
  speculative_eagle_topk to 1, takes its verify window from ``--speculative-dflash-block-size`` (an alias of
  --speculative-num-draft-tokens; both set and different raises) or else the draft config's block_size, and disables
  the overlap scheduler;
* EAGLE3 / STANDALONE take the three EAGLE knobs (all or none; auto choice for STANDALONE is steps 3, topk 1,
  draft tokens 4), STANDALONE "does not support dp attention";
* reserved memory for the memory fraction: STANDALONE "+= 6 * 1024" MiB, other drafters "+= 4 * 1024" in 0.5.11
  (2 * 1024 in older releases, which is what planners/memory.py models for every non-standalone algorithm).
"""

from __future__ import annotations

from ...compat import at_least
from ...drafters import Drafter
from ...flags import EngineHelp, flags_in
from .flags import MTP_STEPS, MTP_TOPK, mtp_args

ALGORITHM = {"dflash": "DFLASH", "eagle3": "EAGLE3", "draft": "STANDALONE"}

#: The first release checked to have each algorithm in its --speculative-algorithm choices (captured help texts:
#: 0.5.9 has EAGLE3 and STANDALONE but not DFLASH; 0.5.11 has all three).
FIRST_RELEASE = {"DFLASH": "0.5.11", "EAGLE3": "0.5.9", "STANDALONE": "0.5.9"}

#: Flags that turn on what DFLASH refuses (pipeline parallel above 1, DP attention).
PP_FLAGS = ("--pp-size", "--pipeline-parallel-size")


def support_problem(kind: str, help_: EngineHelp | None, version: str | None) -> str | None:
    """Why this SGLang cannot run this kind of drafter, naming the release that added it; None when it can."""
    algorithm = ALGORITHM[kind]
    choices = help_.choices.get("--speculative-algorithm") if help_ else None
    first = FIRST_RELEASE[algorithm]
    if choices:
        if algorithm in choices:
            return None
        return (
            f"SGLang {version or '(version unknown)'} has no --speculative-algorithm {algorithm} (its --help offers "
            f"{', '.join(choices)}); {algorithm} arrived in SGLang {first}"
        )
    if at_least(version, first) is False:
        return f"SGLang {version} has no --speculative-algorithm {algorithm}: it arrived in SGLang {first}"
    return None


def layout_problem(kind: str, extra_args: list[str]) -> str | None:
    """DFLASH needs pp_size 1 and no DP attention; STANDALONE no DP attention (the release's own ValueErrors)."""
    values = {flag: value for _, flag, value in flags_in(extra_args)}
    if kind == "dflash":
        for flag in PP_FLAGS:
            if flag in values and (values[flag] or "1") != "1":
                return f"DFLASH runs only with pipeline parallel 1 (SGLang: \"only supports pp_size == 1\"), {flag} {values[flag]} was asked"
    if kind in ("dflash", "draft") and "--enable-dp-attention" in values:
        return f"{ALGORITHM[kind]} does not run with DP attention (SGLang: \"does not support dp attention\")"
    return None


def drafter_args(d: Drafter, help_: EngineHelp | None) -> tuple[list[str], str]:
    """The full flag set for this drafter, and a sentence saying why each value."""
    algorithm = ALGORITHM[d.kind]
    if d.kind == "dflash":
        args = ["--speculative-algorithm", algorithm, "--speculative-draft-model-path", d.path]
        block_flag = "--speculative-dflash-block-size"
        if d.block_size and (help_ is None or help_.knows(block_flag)):
            args += [block_flag, str(d.block_size)]
        why = (
            f"DFlash: --speculative-algorithm DFLASH with {d.name} as the draft model; block size "
            f"{d.block_size or 'from the draft config'} (the drafter's trained block_size: the verify window), steps "
            "and topk are forced to 1 by SGLang, which also turns the overlap scheduler off."
        )
        return args, why
    args = mtp_args(algorithm)
    args[2:2] = ["--speculative-draft-model-path", d.path]
    why = (
        f"{'EAGLE-3' if d.kind == 'eagle3' else 'Standalone draft'}: --speculative-algorithm {algorithm} with "
        f"{d.name} as the draft model, steps {MTP_STEPS}, topk {MTP_TOPK}, draft tokens {MTP_STEPS + 1} (all three "
        "set: SGLang asserts on a partial set; its own auto choice)."
    )
    return args, why


__all__ = ["ALGORITHM", "FIRST_RELEASE", "drafter_args", "layout_problem", "support_problem"]
