"""The pipeline: one request from text to a followed server, told to a Thread, and the operations surfaces call.

    run.py        parse -> probe -> plan -> (approve) -> launch -> follow, resume after a restart of the bot
    approvals.py  risky actions wait for an approver: one-shot, bound to the plan's hash, re-checked on decision
    healing.py    a crash fixed and relaunched, or a death in service restarted, by policy (auto_fix, restart_on_crash)
    ops.py        stop, restart, status, logs, diagnose: THE way surfaces act; structured reports (reports.py)
    speculation.py  bench (a bounded load on a ready deployment) and compare (plans in turn, one table)
    base.py       config, store, backends, locks and probing, shared by the others

The pipeline never talks to Slack or the terminal: it emits domain events (bot/events.py) and answers with values.
"""

from __future__ import annotations

from bot.pipeline.approvals import ApprovalsMixin
from bot.pipeline.healing import HealingMixin
from bot.pipeline.ops import OpsMixin
from bot.pipeline.reports import LogTail, StatusReport, StopDone
from bot.pipeline.run import RunMixin
from bot.pipeline.speculation import SpeculationMixin
from bot.pipeline.types import EXIT_CODES, InteractiveApprover, Outcome, OutcomeState, Requester


class Pipeline(SpeculationMixin, RunMixin, ApprovalsMixin, HealingMixin, OpsMixin):
    """Runs requests (RunMixin), decides approvals (ApprovalsMixin), fixes and restarts by policy (HealingMixin),
    acts on deployments (OpsMixin), and loads or compares speculative plans (SpeculationMixin: bench, compare)."""


__all__ = [
    "EXIT_CODES", "InteractiveApprover", "LogTail", "Outcome", "OutcomeState", "Pipeline", "Requester",
    "StatusReport", "StopDone",
]
