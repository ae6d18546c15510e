"""`compare`: plans run one after the other on the same host, each under the same bounded load (bot/loadtest.py),
each stopped before the next starts, and one table side by side with the speed-up over no speculation.

"compare stock MTP and the dflash drafter for Qwen3.6-27B on CT129" reads as two start requests that differ only in
how they speculate ("start Qwen3.6-27B on CT129 with stock MTP", "... with the dflash drafter"), each read by the
request parser, so every variant means what it would mean alone.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from bot.inventory import Inventory
from bot.loadtest import LoadReport, measure, table
from bot.models import DeployRequest, ParseError
from bot.parse import parse_request

if TYPE_CHECKING:
    from bot.events import Thread
    from bot.pipeline import Pipeline, Requester

_COMPARE = re.compile(
    r"^\s*(?:/deploy\s+)?compare\s+(?P<variants>.+?)\s+(?:for|of|with|on)\s+(?P<target>\S+\s+on\s+\S+)\s*$",
    re.IGNORECASE,
)
_SPLIT = re.compile(r"\s*(?:,\s*(?:and\s+)?|\s+and\s+|\s+vs\.?\s+|\s+versus\s+|\s+against\s+)\s*", re.IGNORECASE)
MAX_VARIANTS = 4


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CompareRun(Frozen):
    request: str  # the variant as it reads
    state: str  # the start's outcome ("ready", "rejected", "crashed"...)
    message: str | None = None
    report: LoadReport | None = None
    stopped: bool = False


class CompareReport(Frozen):
    runs: list[CompareRun] = Field(default_factory=list)
    rows: list[list[str]] = Field(default_factory=list)  # the table, header first


def is_compare(text: str) -> bool:
    """Does this request ask for a comparison ("compare ...", "/deploy compare ...")?"""
    return bool(re.match(r"^\s*(?:/deploy\s+)?compare\b", text or "", re.IGNORECASE))


def compare_requests(text: str, inventory: Inventory) -> list[DeployRequest] | ParseError:
    """The start requests a compare text names, or why it does not read as one."""
    match = _COMPARE.match(text)
    if match is None:
        return ParseError(
            kind="not_understood",
            message="A comparison names what to compare and the model on a host: 'compare stock MTP and the dflash "
            "drafter for Qwen3.6-27B on CT129'.",
            suggestions=["compare stock MTP and the dflash drafter for Qwen3.6-27B on CT129"],
        )
    variants = [v for v in _SPLIT.split(match.group("variants")) if v]
    if not 2 <= len(variants) <= MAX_VARIANTS:
        return ParseError(kind="invalid_value", message=f"Compare 2 to {MAX_VARIANTS} plans; {len(variants)} named.")
    requests: list[DeployRequest] = []
    for variant in variants:
        phrase = re.sub(r"(?i)^no\s+", "without ", variant)  # "no speculation": the reader's "without"
        lead = "" if re.match(r"(?i)(with|without|using)\b", phrase) else "with "
        read = parse_request(f"start {match.group('target')} {lead}{phrase}", inventory)
        if isinstance(read, ParseError):
            return read.model_copy(update={"message": f"'{variant}': {read.message}"})
        if read.ignored:
            return ParseError(kind="not_understood", message=f"'{variant}': I did not understand "
                              + ", ".join(repr(p) for p in read.ignored))  # fmt: skip
        requests.append(read)
    if len({(r.speculative, r.draft_model, r.engine) for r in requests}) < len(requests):
        return ParseError(kind="invalid_value", message="Two of the plans are the same; compare different ones.")
    return requests


def _label(request: DeployRequest, report_plan: object | None = None) -> str:
    how = {"mtp": "stock MTP", "none": "no speculation", None: "engine default"}.get(request.speculative)
    if how is None:
        how = f"{request.speculative} drafter" + (f" {request.draft_model}" if request.draft_model else "")
    return f"{request.engine + ': ' if request.engine else ''}{how}"


async def compare(
    pipeline: Pipeline, requests: list[DeployRequest], thread: Thread, who: Requester
) -> CompareReport:
    """Start each plan, load it, stop it, then the next; the table compares those that became ready."""
    runs: list[CompareRun] = []
    for request in requests:
        outcome = await pipeline.start(request, thread, who)
        dep = outcome.deployment
        if outcome.state != "ready" or dep is None:
            runs.append(CompareRun(request=_label(request), state=outcome.state, message=outcome.message))
            continue
        plan = dep.plan
        label = _label(request) + (f" ({plan.draft_model})" if plan.draft_model and not request.draft_model else "")
        report: LoadReport | None = None
        message = None
        try:
            report = await measure(
                pipeline.remotes.get(dep.host), pipeline.host_config(dep.host).python, dep.port, plan.model,
                label=label, speculative=plan.speculative,
            )  # fmt: skip
        except Exception as exc:  # noqa: BLE001 - the load failed: said in the table, and the server still stops
            message = f"the load did not run: {exc}"
        finally:
            stop = await pipeline.stop_request(
                DeployRequest(action="stop", model=plan.model, host=dep.host), thread, who
            )
        runs.append(CompareRun(request=label, state="ready", message=message, report=report,
                               stopped=stop.state == "stopped"))  # fmt: skip
    rows = table([r.report for r in runs if r.report is not None])
    return CompareReport(runs=runs, rows=rows)


def render(report: CompareReport) -> str:
    """The table as fixed-width text (a surface puts it in a code block), then what did not run."""
    lines: list[str] = []
    if len(report.rows) > 1:
        widths = [max(len(row[i]) for row in report.rows) for i in range(len(report.rows[0]))]
        for row in report.rows:
            lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    for run in report.runs:
        if run.report is None or run.message:
            lines.append(f"{run.request}: {run.state}" + (f" ({run.message})" if run.message else ""))
        if run.state == "ready" and not run.stopped:
            lines.append(f"{run.request}: not stopped, stop it by hand")
    return "\n".join(lines)
