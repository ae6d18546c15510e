"""Next steps and the fix for a finding: routes each category to the module that advises on it."""

from __future__ import annotations

import re

from bot.diagnose_advice import Advice, Finding, LogLine, PlanView, category_advice
from bot.diagnose_advice_build import advise_jit
from bot.diagnose_advice_other import advise_other
from bot.diagnose_advice_port import advise_port
from bot.diagnose_advice_version import advise_architecture, architecture_named, installed_version, version_sentence
from bot.diagnose_flag_history import flag_history
from bot.models import Fix, PlanOverrides


def advise(f: Finding, s: PlanView, lines: list[LogLine]) -> Advice:
    if f.category == "other":
        return advise_other(f, s)
    if f.category == "jit_compile_failure":
        return advise_jit(f, s, lines)
    if f.category == "port_in_use":
        return advise_port(f, s, lines)
    if f.category == "unsupported_architecture":
        return advise_architecture(f, s)
    if f.category == "bad_argument" and f.kind == "trust_remote_code":
        return (["the model folder ships its own modelling/tokenizer code: relaunch with --trust-remote-code (only "
                 "for checkpoints you trust: it runs their Python code)"],
                Fix(summary="add --trust-remote-code", overrides=PlanOverrides(extra_args=["--trust-remote-code"])))
    steps, fix = category_advice(f, s, lines)
    if f.category == "bad_argument" and f.rule == "argparse_unrecognized" and f.match is not None:
        # Which captured release has, renamed or dropped each refused flag.
        for flag in re.findall(r"--[\w-]{1,80}", f.match.group(1))[:3]:
            sentence = flag_history(s.engine, flag, installed_version(s))
            if sentence:
                steps.append(sentence)
    if f.category == "speculative_config_invalid":
        # The release that added MTP drafting for this architecture, when the compatibility table knows it.
        sentence = version_sentence(architecture_named(f, s), s, mtp=True)
        if sentence:
            steps = [step for step in steps if "may predate MTP support" not in step] + [sentence]
    return steps, fix
