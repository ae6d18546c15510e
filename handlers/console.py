"""The terminal thread: the same events the Slack thread gets, printed with rich; approvals at the prompt."""

from __future__ import annotations

import asyncio

from rich.console import Console
from rich.markup import escape

from bot.events import (
    ApprovalDecided,
    ApprovalRequested,
    Crashed,
    Diagnosed,
    EngineLoad,
    Event,
    Failed,
    Info,
    Launched,
    LogExcerpt,
    Parsed,
    ParseFailed,
    Planned,
    PlanRejected,
    Probed,
    Ready,
    Stopped,
)
from bot.diagnose import diagnosis_text
from bot.models import GIB, LaunchPlan
from bot.mentions import plain as plain_mentions
from planners.render import failure_text, plan_text



class ConsoleThread:
    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(highlight=False, soft_wrap=True)

    def _step(self, name: str, text: str, style: str = "bold green") -> None:
        self.console.print(f"[{style}]{name:>8}[/] {escape(plain_mentions(text))}")

    async def emit(self, event: Event) -> None:
        c = self.console
        if isinstance(event, Parsed):
            self._step("parse", event.request.summary())
            if event.note:
                self._step("", event.note, "dim")
        elif isinstance(event, ParseFailed):
            self._step("parse", f"{event.error.kind}: {event.error.message}", "bold red")
            for suggestion in event.error.suggestions:
                c.print(f"         - {escape(suggestion)}")
        elif isinstance(event, Probed):
            facts = event.facts
            gpus = ", ".join(
                f"{g.index}: {g.name} {g.memory_free_bytes / GIB:.1f}/{g.memory_total_bytes / GIB:.1f} GiB free"
                for g in facts.gpus
            ) or f"no GPUs ({facts.gpu_error or 'none found'})"
            engines = ", ".join(f"{n} {e.version}" for n, e in facts.engines.items()) or "no engine"
            self._step("probe", f"{facts.host} in {event.seconds:.2f} s via {facts.gpu_source}: {gpus}; {engines}")
        elif isinstance(event, Planned):
            self._step("plan", f"{event.plan.engine} TP {event.plan.tp} on GPUs {event.plan.gpus}, port {event.plan.port}")
            c.print(escape(plan_text(event.plan)), style="cyan")
        elif isinstance(event, PlanRejected):
            self._step("plan", "does not work:", "bold red")
            c.print(escape(failure_text(event.failure)), style="red")
        elif isinstance(event, ApprovalRequested):
            self._step("approve", f"{event.title} needs approval ({event.approval_id}): " + "; ".join(event.reasons), "bold yellow")
        elif isinstance(event, ApprovalDecided):
            self._step("approve", f"{event.approval_id} {event.decision} by {event.decided_by or '-'}", "yellow")
        elif isinstance(event, Launched):
            again = " (already launched: nothing new started)" if event.already_running else ""
            self._step("launch", f"{event.handle.label}, log {event.handle.log_path}{again}")
        elif isinstance(event, LogExcerpt):
            if event.omitted:
                c.print(f"         [dim]… {event.omitted} lines cut[/]")
            for line in event.lines:
                c.print(f"         [dim]│ {escape(line)}[/]")
        elif isinstance(event, Ready):
            extra = f", KV cache {event.kv_tokens:,} tokens" if event.kv_tokens else ""
            self._step("ready", f"ready at {event.endpoint} in {event.seconds:.0f} s{extra}")
            if event.measured:
                self._step("", event.measured, "dim")
        elif isinstance(event, Crashed):
            if event.served_s is None:
                code = "unknown" if event.exit_code is None else str(event.exit_code)
                self._step("crash", f"the server exited (code {code})", "bold red")
            else:
                self._step("crash", event.stopped_text(), "bold red")
        elif isinstance(event, Diagnosed):
            c.print(escape(diagnosis_text(event.diagnosis)), style="red")
        elif isinstance(event, Stopped):
            self._step("stop", event.message)
        elif isinstance(event, Failed):
            self._step(event.step or "error", event.message, "bold red")
        elif isinstance(event, EngineLoad):  # `ask --follow`: a ready server's engine figures, now and then
            self._step("live", event.summary + (f" ⚠️ {event.trouble}" if event.trouble else ""),
                       "yellow" if event.trouble else "dim")
        elif isinstance(event, Info):
            self._step(event.step or "info", event.message, "dim")


class ConsoleApprover:
    """Approvals answered at the prompt (or all yes with --yes, or all no when there is no terminal)."""

    def __init__(self, console: Console, *, assume_yes: bool = False, interactive: bool = True) -> None:
        self.console = console
        self.assume_yes = assume_yes
        self.interactive = interactive

    async def confirm(self, title: str, reasons: list[str], plan: LaunchPlan | None) -> bool:
        self.console.print(f"[bold yellow]approval needed[/] for {escape(title)}:")
        for reason in reasons:
            self.console.print(f"  - {escape(plain_mentions(reason))}")
        if self.assume_yes:
            self.console.print("  approved (--yes)")
            return True
        if not self.interactive:
            self.console.print("  not approved: no terminal to ask (rerun with --yes)")
            return False
        answer = await asyncio.to_thread(input, "approve? [y/N] ")
        return answer.strip().lower() in ("y", "yes")
