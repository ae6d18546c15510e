"""vLLM's ``--speculative-config`` for a separate drafter: methods ``dflash``, ``eagle3``, ``draft_model``.

From vLLM's own source, ``vllm/config/speculative.py`` of the installed releases (the wheels the help captures in
bot/simhost/enginehelp/ were made from):
* 0.11.0: ``SpeculativeMethod = Literal["ngram", "eagle", "eagle3", "medusa", "mlp_speculator", "draft_model", ...]``
  with no "dflash"; a draft_model still raises NotImplementedError("Speculative decoding with draft model is not
  supported yet. ...");
* 0.17.0: draft_model runs (v1/spec_decode/draft_model.py), still no "dflash";
* 0.20.0: ``DFlashModelTypes = Literal["dflash"]`` joins EagleModelTypes: the first release checked with DFlash;
* ``draft_tensor_parallel_size`` "Can only be 1 or the same as the target model's tensor parallel size", and
  defaults to the target's (``_verify_and_get_draft_tp``), so the planner leaves it unset and counts the draft
  sharded like the target;
* DFlash proposes a block minus its anchor: ``num_speculative_tokens`` = block_size - 1 (vllm-project/recipes
  #929: "num_speculative_tokens":7 for "block size 8 minus one").
"""

from __future__ import annotations

import json

from ...compat import at_least
from ...drafters import DEFAULT_DFLASH_BLOCK, DEFAULT_SPEC_TOKENS, Drafter

METHOD = {"dflash": "dflash", "eagle3": "eagle3", "draft": "draft_model"}

#: The first release checked where each method runs (see the module docstring).
FIRST_RELEASE = {"dflash": "0.20.0", "eagle3": "0.11.0", "draft_model": "0.17.0"}


def support_problem(kind: str, version: str | None) -> str | None:
    """Why this vLLM cannot run this kind of drafter, naming the release that added it; None when it can (or the
    version is unknown: vLLM's --help does not list the methods)."""
    method = METHOD[kind]
    first = FIRST_RELEASE[method]
    if at_least(version, first) is False:
        return f"vLLM {version} has no speculative method {method!r}: it arrived in vLLM {first}"
    return None


def num_speculative_tokens(d: Drafter) -> int:
    if d.kind == "dflash":
        return max(1, (d.block_size or DEFAULT_DFLASH_BLOCK) - 1)
    return DEFAULT_SPEC_TOKENS


def speculative_config(d: Drafter) -> tuple[str, str]:
    """The JSON for --speculative-config, and a sentence saying why each value."""
    n = num_speculative_tokens(d)
    text = json.dumps({"method": METHOD[d.kind], "model": d.path, "num_speculative_tokens": n})
    if d.kind == "dflash":
        why = f"{n} speculative tokens: the drafter's block size {d.block_size or DEFAULT_DFLASH_BLOCK} minus one"
    else:
        why = f"{n} speculative tokens (SGLang's auto choice of 3 steps, the same depth)"
    return text, f"{'DFlash' if d.kind == 'dflash' else d.kind}: --speculative-config {text}: {d.name}; {why}."


__all__ = ["FIRST_RELEASE", "METHOD", "num_speculative_tokens", "speculative_config", "support_problem"]
