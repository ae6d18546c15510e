"""A crash the installed engine version explains: the model needs a newer engine than the one running.

"Transformers does not recognize this architecture" reads like an old transformers, but when the compatibility table
(planners/compat.py) says the model's architecture arrived in a later engine release than the one installed, the
engine is what is too old (its pinned transformers comes with it): that is an unsupported architecture, with the
release that added it. The installed version comes from the plan, the host probe, or the log's own banner
("vLLM API server version 0.8.5").
"""

from __future__ import annotations

import re

from bot.diagnose.advice.plan_view import PlanView
from bot.diagnose.types import Finding, LogLine
from bot.diagnose.advice.version import added_in, architecture_of_model_type, installed_version
from planners.compat import at_least, engine_label

#: The version lines engines print at start: vLLM's "vLLM API server version 0.8.5", its engine config line
#: "Initializing a V1 LLM engine (v0.10.1) with config:" (V0: "Initializing an LLM engine (v0.6.4.post1)"), the
#: block-letter banner of 0.1x+ ("█ ▀▄▀ █  version 0.18.0"); SGLang's "sglang==0.5.2" as pip and its env report print it.
_BANNER = re.compile(r"vLLM API server version v?(\d+\.\d+(?:\.\d+)?[\w.+-]{0,20})"
                     r"|\bsglang[= ]=?v?(\d+\.\d+\.\d+[\w.+-]{0,20})"
                     r"|Initializing an? (?:V1 )?LLM engine \(v(\d+\.\d+\.\d+[\w.+-]{0,20})\)"
                     r"|\u2588 {1,4}version (\d+\.\d+\.\d+[\w.+-]{0,20})")


def version_in_log(lines: list[LogLine]) -> str | None:
    """The engine version the log's start banner names, when it does."""
    for line in lines[:400]:
        match = _BANNER.search(line.text)
        if match:
            return next(group for group in match.groups() if group)
    return None


def engine_too_old(finding: Finding, setup: PlanView, lines: list[LogLine]) -> None:
    """Turn "transformers does not know model type X" into an unsupported architecture when the table says the
    installed engine predates X (the finding is changed in place)."""
    if finding.category != "transformers_too_old" or finding.match is None or not finding.match.groups():
        return
    model_type = finding.match.group(1)
    arch = architecture_of_model_type(model_type) if model_type else None
    installed = installed_version(setup) or version_in_log(lines)
    minimum = added_in(arch, setup.engine)
    if not (arch and minimum and installed and at_least(installed, minimum) is False):
        return
    finding.category, finding.kind = "unsupported_architecture", "engine_too_old"
    finding.cause = (f"model type '{model_type}' ({arch}) needs {engine_label(setup.engine or '', minimum)} or later; "
                     f"this is {installed}, whose transformers does not know it either")
    finding.alternatives = ["transformers_too_old"]
