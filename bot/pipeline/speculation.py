"""Is the drafter worth it? (issue 16, item 5): `bench` on a ready deployment and `compare` of several plans, as
pipeline operations (the surfaces call these, never the load agent): values out, events told to the thread."""

from __future__ import annotations

from bot.compare import compare, compare_requests, is_compare, render
from bot.events import Info, ParseFailed, Thread
from bot.loadtest import measure, table
from bot.models import Deployment, ParseError
from bot.pipeline.base import PipelineBase
from bot.pipeline.types import Outcome, Requester
from bot.remote import RemoteError


def _label(dep: Deployment) -> str:
    plan = dep.plan
    if plan.draft_model:
        return f"{plan.model}, {plan.speculative} drafter {plan.draft_model}"
    return f"{plan.model}, {'stock MTP' if plan.speculative == 'mtp' else 'no speculation'}"


class SpeculationMixin(PipelineBase):
    async def bench_deployment(self, dep: Deployment, thread: Thread) -> Outcome:
        """A short, bounded load against a ready deployment at 1 and 8 concurrent requests, then its figures."""
        if dep.state != "ready":
            message = f"{dep.model} on {dep.host} is {dep.state}, not ready: nothing to load"
            await thread.emit(Info(message=message))
            return Outcome("failed", dep, message)
        host = self.host_config(dep.host)
        try:
            report = await measure(self.remotes.get(dep.host), host.python, dep.port, dep.plan.model,
                                   label=_label(dep), speculative=dep.plan.speculative)  # fmt: skip
        except RemoteError as exc:
            await thread.emit(Info(message=f"the load did not run: {exc}"))
            return Outcome("failed", dep, str(exc))
        rows = table([report])
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        text = "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows)
        await thread.emit(Info(message=text, step="ready"))
        await self.store.audit("bench", host=dep.host, deployment_id=dep.id, result="done", detail=rows[1][0])
        return Outcome("done", dep, text)

    async def compare_text(self, text: str, thread: Thread, who: Requester) -> Outcome:
        """'compare A and B for MODEL on HOST': each plan started, loaded and stopped in turn; one table."""
        requests = compare_requests(text, self.inventory())
        if isinstance(requests, ParseError):
            await thread.emit(ParseFailed(error=requests))
            return Outcome("bad_request", message=requests.message)
        report = await compare(self, requests, thread, who)  # type: ignore[arg-type]
        shown = render(report)
        await thread.emit(Info(message=shown, step="ready"))
        await self.store.audit("compare", actor=who.user, host=requests[0].host, result="done",
                               detail=" | ".join(run.request for run in report.runs))  # fmt: skip
        ready = sum(1 for run in report.runs if run.report is not None)
        return Outcome("done" if ready == len(report.runs) else "failed", message=shown)

    async def handle_text(self, text: str, thread: Thread, who: Requester = Requester(), *,
                          until_ready: bool = True) -> Outcome:
        if is_compare(text):
            return await self.compare_text(text, thread, who)
        return await super().handle_text(text, thread, who, until_ready=until_ready)  # type: ignore[misc]
