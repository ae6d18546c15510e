"""How a diagnosis is shown: the evidence lines as printed (clipped, redacted) and the plain-text rendering."""

from __future__ import annotations

import re
from collections.abc import Iterable

from bot.diagnose.types import LogLine
from bot.lognorm import strip_ansi
from bot.models import Diagnosis, EvidenceLine, LaunchPlan, PlanOverrides
from bot.redact import redact

MAX_EVIDENCE_CHARS = 400


def last_line(lines: list[LogLine]) -> LogLine | None:
    return next((line for line in reversed(lines) if line.text), None)


def _clip(line: LogLine, match: re.Match[str] | None) -> str:
    """The line as printed (colours and tqdm redraws removed); a very long line keeps its head and the matched part."""
    text = strip_ansi(line.raw).rstrip()
    if "\r" in text:
        text = next((part for part in reversed(text.split("\r")) if part.strip()), "")
    if len(text) <= MAX_EVIDENCE_CHARS:
        return text
    needle = match.group(0)[:60] if match is not None else ""
    start = text.find(needle) if needle else -1
    if start < 0 or start + len(needle) < MAX_EVIDENCE_CHARS:
        return text[:MAX_EVIDENCE_CHARS - 1] + "…"
    head = MAX_EVIDENCE_CHARS // 2
    begin = max(head, start - 60)
    return text[:head] + " … " + text[begin:begin + MAX_EVIDENCE_CHARS - head - 4] + "…"


def evidence_of(lines: list[LogLine | None], match: re.Match[str] | None, secrets: Iterable[str]) -> list[EvidenceLine]:
    out: list[EvidenceLine] = []
    seen: set[int] = set()
    for index, line in enumerate(lines):
        if line is None or line.number in seen:
            continue
        seen.add(line.number)
        out.append(EvidenceLine(line=line.number, text=redact(_clip(line, match if index == 0 else None), secrets)))
    return out


def secrets_of(plan: LaunchPlan | None) -> list[str]:
    if plan is None:
        return []
    return [value for key, value in plan.env.items()
            if re.search(r"TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL", key, re.IGNORECASE)]


def unsure_words(d: Diagnosis) -> str:
    """'; unsure between other and jit_compile_failure' for a verdict with alternatives, else ''."""
    if not d.alternatives:
        return ""
    return "; unsure between " + ", ".join([d.category, *d.alternatives[:-1]]) + f" and {d.alternatives[-1]}"


def _overrides_words(overrides: PlanOverrides) -> str:
    parts = [f"{name}={value}" for name, value in overrides.model_dump(exclude_defaults=True).items()]
    return ", ".join(parts) if parts else "no change"


def diagnosis_text(d: Diagnosis) -> str:
    """Plain multi-line rendering: cause, evidence (with line numbers), next steps, fix."""
    out = [f"Cause: {d.cause}", f"Category: {d.category} (confidence {d.confidence:.2f}{unsure_words(d)})"]
    if d.evidence:
        out.append("Evidence:")
        width = len(str(max(e.line for e in d.evidence)))
        out.extend(f"  line {e.line:>{width}}: {e.text}" for e in d.evidence)
    if d.next_steps:
        out.append("Next steps:")
        out.extend(f"  {i}. {step}" for i, step in enumerate(d.next_steps, start=1))
    if d.fix is not None:
        out.append(f"Fix (relaunch after approval): {d.fix.summary} [{_overrides_words(d.fix.overrides)}]")
    return "\n".join(out)
