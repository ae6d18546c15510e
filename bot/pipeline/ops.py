"""The operations surfaces call on deployments: stop, restart, status, logs, diagnose. THE way a surface acts.

Each builds a structured report (bot/pipeline/reports.py) and tells it to the Thread; surfaces never read a log,
probe a host or run the diagnoser themselves. A stop is confirmed by the host's backend, not assumed.
"""

from __future__ import annotations

import asyncio

from bot.events import Diagnosed, Failed, Info, LogExcerpt, Stopped, Thread
from bot.engine_figures import figures_line, ready_figures
from bot.mentions import mention
from bot.models import DeployRequest, Deployment, HostFacts, PlanOverrides
from bot.pipeline.base import PipelineBase
from bot.pipeline.healing import clock
from bot.pipeline.reports import DeploymentRow, ForeignProcess, GpuUse, HostStatus, LogTail, StatusReport, StopDone
from bot.pipeline.types import Outcome, Requester
from bot.remote import RemoteError
from bot.tail import TAIL_BYTES

#: How much of the log a thread's `logs N` and `diagnose` read (the end only, never the whole file).
REPLY_TAIL_BYTES = 64 * 1024


class OpsMixin(PipelineBase):
    # ------------------------------------------------------------------ stop and restart

    async def _targets(self, request: DeployRequest) -> list[Deployment]:
        deployments = await self.store.active_deployments(request.host)
        # A port names one server when the same model runs twice on a host (a thread's `stop` acts on its own).
        return [d for d in deployments if (request.model is None or d.model == request.model)
                and (request.port is None or d.port == request.port)]

    async def stop_request(self, request: DeployRequest, thread: Thread, who: Requester) -> Outcome:
        # First: a person's stop wins over a restart the policy has planned for a server that died in service.
        cancelled = await self._cancel_pending_restarts(request, thread, who, "stopped by request")
        targets = await self._targets(request)
        if not targets and cancelled:
            return Outcome("stopped", cancelled[-1], "the pending restart was cancelled")
        if not targets:
            where = f" on {request.host}" if request.host else ""
            msg = f"nothing deploybot started is running{where}" + (f" for {request.model}" if request.model else "")
            others = await self._servers_started_elsewhere(request)
            if others:
                msg += ". Running there, not started by deploybot (stop it by hand or ask its owner):\n" + "\n".join(others)
            await thread.emit(Info(message=msg, step="stop"))
            return Outcome("done", message=msg)
        outcome = Outcome("stopped")
        for dep in targets:
            if self._needs_foreign_approval(dep, who):
                started_by = mention(dep.requested_by)
                result = await self._ask_approval("stop", dep.plan, [f"{dep.model} was started by {started_by}"],
                                                  thread, who, request=request, deployment_id=dep.id)
                if isinstance(result, Outcome):
                    outcome = result
                    continue
            outcome = await self._stop_one(dep, thread, who)
        return outcome

    async def _cancel_pending_restarts(self, request: DeployRequest, thread: Thread, who: Requester,
                                       why: str) -> list[Deployment]:
        """Cancel the restarts policy.restart_on_crash planned for the crashed deployments the request names (the
        back-off running here, or stored for the next start-up): each told and audited; the cancelled ones."""
        cancelled: list[Deployment] = []
        for dep in await self.store.pending_restarts(request.host):
            if (request.model is not None and dep.model != request.model) or \
                    (request.port is not None and dep.port != request.port):
                continue
            taken = await self.store.take_pending_restart(dep.id)
            if taken is None or taken.chain.pending_restart is None:
                continue  # it launched (or another stop cancelled it) meanwhile
            due = clock(taken.chain.pending_restart.due_at)
            message = (f"{dep.model} on {dep.host}: the restart planned by policy restart_on_crash (due {due}) is "
                       f"cancelled, {why}; it will not be started again by itself")
            await thread.emit(Info(message=message, step="stop"))
            await self.store.audit("stop", actor=who.user, host=dep.host, deployment_id=dep.id,
                                   result="restart_cancelled", detail=message)
            cancelled.append(taken)
        return cancelled

    async def _servers_started_elsewhere(self, request: DeployRequest) -> list[str]:
        """Inference servers the probe sees on the host that deploybot did not start (by hand, another tool), so
        that "stop X" finding nothing of ours still tells what holds the GPUs and who owns it."""
        if request.host is None:
            return []
        try:
            facts = await self.backend(request.host).probe()
        except RemoteError:
            return []
        lines: dict[int, str] = {}
        for proc in facts.gpu_processes:
            server = proc.server
            if server is None or proc.pid in lines:
                continue
            if request.model and request.model.lower() not in (server.model_path or "").lower():
                continue
            lines[proc.pid] = (f"  GPU {proc.gpu_index}: PID {proc.pid}, {server.engine} {server.model_path or '?'}, "
                               f"port {server.port or '?'}, user {proc.user or '?'}")
        return list(lines.values())

    async def stop_deployment(self, dep: Deployment) -> StopDone:
        """Stop one deployment through its backend, which confirms it (for a process: its PID holds no GPU memory
        and its port is closed); the store follows what the backend saw."""
        assert dep.handle is not None
        previous_state = dep.state
        # Marked first: the follower that sees the process end must know it was asked to.
        await self.store.update_deployment(dep.id, state="stopping")
        report = await self.backend(dep.host).stop(dep.handle, grace_s=self.config.policy.stop_grace_s)
        dep.state = "stopped" if report.stopped else previous_state
        await self.store.update_deployment(dep.id, state=dep.state)
        return StopDone(deployment_id=dep.id, host=dep.host, model=dep.model, port=dep.port, where=dep.handle.label,
                        stopped=report.stopped, confirmed=report.confirmed, killed=report.killed,
                        holders=report.holders,
                        gpus_after=[GpuUse(index=i, used_bytes=used) for i, used in report.gpu_used_bytes.items()
                                    if i in dep.plan.gpus])

    async def _stop_one(self, dep: Deployment, thread: Thread, who: Requester) -> Outcome:
        if dep.handle is None:
            message = (f"{dep.model} on {dep.host}: its launch never answered, so deploybot does not know what runs; "
                       f"resume it first (deploybot resume) to learn, then stop it")
            await thread.emit(Stopped(deployment_id=dep.id, message=message))
            return Outcome("stopped", dep, message)
        done = await self.stop_deployment(dep)
        message = done.text()
        await self.store.audit("stop", actor=who.user, host=dep.host, deployment_id=dep.id,
                               result="stopped" if done.stopped else "incomplete", detail=message)
        await thread.emit(Stopped(deployment_id=dep.id, message=message))
        return Outcome("stopped", dep, message)

    def _needs_foreign_approval(self, dep: Deployment, who: Requester) -> bool:
        """Stopping a server someone else started waits for an approver (policy stop_foreign): `stop` and
        `restart` alike, from /deploy or from a thread."""
        foreign = dep.requested_by is not None and dep.requested_by != who.user
        return foreign and "stop_foreign" in self.config.policy.require_approval_for

    async def restart(self, request: DeployRequest, thread: Thread, who: Requester, *,
                      until_ready: bool = True) -> Outcome:
        targets = await self._targets(request)
        foreign = [dep for dep in targets if self._needs_foreign_approval(dep, who)]
        if foreign:
            # Nothing is stopped until an approver says so; approving stops it and starts it again (decide()).
            dep = foreign[-1]
            result = await self._ask_approval(
                "stop", dep.plan, [f"{dep.model} was started by {mention(dep.requested_by)}",
                                   "restart: it is started again after the stop, under the name of who asked"],
                thread, who, request=request, deployment_id=dep.id, title=f"restart {dep.model} on {dep.host}")
            if isinstance(result, Outcome):
                return result
        # A person's restart replaces the one the policy planned: never both.
        await self._cancel_pending_restarts(request, thread, who, "replaced by this restart")
        previous = targets[-1] if targets else (
            await self.store.last_successful(request.host, request.model) if request.host and request.model else None)
        for dep in targets:
            await self._stop_one(dep, thread, who)
        return await self._start_again(request, previous, thread, who, until_ready=until_ready)

    async def _start_again(self, request: DeployRequest, previous: Deployment | None, thread: Thread,
                           who: Requester, *, until_ready: bool) -> Outcome:
        """The start half of a restart: the previous deployment's choices unless the request changes them."""
        start = request.model_copy(update={"action": "start"})
        overrides = PlanOverrides()
        if previous is not None:
            plan = previous.plan
            overrides = plan.overrides
            start = start.model_copy(update={
                "engine": request.engine or plan.engine, "speculative": request.speculative or plan.speculative,
                "tp": request.tp or plan.tp, "port": request.port or plan.port,
                "context_length": request.context_length or plan.context_length, "gpus": request.gpus or plan.gpus,
            })
        return await self.start(start, thread, who, until_ready=until_ready, overrides=overrides)

    # ------------------------------------------------------------------ status

    async def status_report(self, host: str | None = None) -> StatusReport:
        """Every host (or one): GPUs used, deploybot's deployments with their live figures, and the processes on
        the GPUs that deploybot did not start. The engines' /metrics are read while the hosts are probed."""
        hosts = [host] if host else list(self.config.hosts)
        actives = {h: await self.store.active_deployments(h) for h in hosts}
        results, live = await asyncio.gather(
            asyncio.gather(*(self.backend(h).probe() for h in hosts), return_exceptions=True),
            asyncio.gather(*(ready_figures(self.remotes.get(h), self.host_config(h).python, actives[h]) for h in hosts)))
        figures = {dep_id: f for per_host in live for dep_id, f in per_host.items()}
        return StatusReport(hosts=[
            HostStatus(name=name, error=str(facts)) if isinstance(facts, BaseException)
            else _host_status(name, facts, actives[name], {k: figures_line(v) for k, v in figures.items()})
            for name, facts in zip(hosts, results)])

    async def status(self, host: str | None, thread: Thread) -> Outcome:
        text = (await self.status_report(host)).text()
        await thread.emit(Info(message=text, step="probe"))
        return Outcome("done", message=text)

    # ------------------------------------------------------------------ logs and diagnosis

    async def log_tail(self, dep: Deployment, max_bytes: int = TAIL_BYTES) -> LogTail:
        """The end of a deployment's log through its backend (bounded, redacted); the error as a value."""
        if dep.handle is None:
            return LogTail(deployment_id=dep.id, model=dep.model, host=dep.host, has_log=False)
        try:
            text = self.redact(await self.backend(dep.host).tail(dep.handle, max_bytes))
        except RemoteError as exc:
            return LogTail(deployment_id=dep.id, model=dep.model, host=dep.host, error=str(exc))
        return LogTail(deployment_id=dep.id, model=dep.model, host=dep.host, text=text)

    async def logs(self, request: DeployRequest, thread: Thread, lines: int = 30) -> Outcome:
        targets = await self._targets(request) or [
            d for d in await self.store.deployments(host=request.host, model=request.model)][-1:]
        if not targets:
            await thread.emit(Info(message="no deployment found for that"))
            return Outcome("done")
        dep = targets[-1]
        if dep.handle is None:
            await thread.emit(Info(message=f"{dep.model} has no log yet"))
            return Outcome("done")
        tail = self.redact(await self.backend(dep.host).tail(dep.handle, 64 * 1024)).splitlines()
        await thread.emit(LogExcerpt(lines=tail[-lines:], omitted=max(0, len(tail) - lines), requested=True))
        return Outcome("done", dep)

    async def deployment_logs(self, dep: Deployment, thread: Thread, lines: int,
                              max_bytes: int = REPLY_TAIL_BYTES) -> Outcome:
        """A thread's `logs N`: the last lines of this deployment's log."""
        tail = await self._readable_tail(dep, thread, max_bytes)
        if isinstance(tail, Outcome):
            return tail
        kept = tail.last(lines)
        await thread.emit(LogExcerpt(lines=kept, requested=True) if kept
                          else Info(message=f"the log of {dep.model} is empty"))
        return Outcome("done", dep)

    async def diagnose_deployment(self, dep: Deployment, thread: Thread,
                                  max_bytes: int = REPLY_TAIL_BYTES) -> Outcome:
        """Read the end of the log again and diagnose it (after a crash, or for a server that misbehaves)."""
        tail = await self._readable_tail(dep, thread, max_bytes)
        if isinstance(tail, Outcome):
            return tail
        # (a crashed deployment's engine is gone: its log is never read as a healthy start)
        diagnosis = await self.diagnoser.diagnose(tail.text, exit_code=dep.exit_code, engine=dep.engine,
                                                  plan=dep.plan, secrets=self.secrets.values(),
                                                  ended=dep.state == "crashed")
        await thread.emit(Diagnosed(diagnosis=diagnosis))
        await self.store.audit("diagnose", host=dep.host, deployment_id=dep.id, result=diagnosis.category,
                               detail=diagnosis.cause)
        return Outcome("done", dep, diagnosis.cause)

    async def _readable_tail(self, dep: Deployment, thread: Thread, max_bytes: int) -> LogTail | Outcome:
        """The log's end, or the Outcome already told when there is none or it could not be read."""
        tail = await self.log_tail(dep, max_bytes)
        if tail.error is not None:
            await thread.emit(Failed(message=f"could not read the log on {dep.host}: {tail.error}"))
            return Outcome("failed", dep, tail.error)
        if not tail.has_log:
            await thread.emit(Info(message=f"{dep.model} has no log yet"))
            return Outcome("done", dep)
        return tail


def _host_status(name: str, facts: HostFacts, active: list[Deployment], live: dict[str, str]) -> HostStatus:
    rows = [DeploymentRow(id=d.id, host=name, model=d.model, state=d.state, port=d.port, gpus=d.plan.gpus,
                          where=d.handle.label if d.handle else None, requested_by=d.requested_by,
                          created_at=d.created_at, live=live.get(d.id)) for d in active]
    others = []
    for proc in facts.gpu_processes:
        if any(d.handle is not None and d.handle.holds_process(proc.pid) for d in active):
            continue
        what = (f"{proc.server.engine} {proc.server.model_path} port {proc.server.port}" if proc.server
                else (proc.name or "process"))
        others.append(ForeignProcess(gpu_index=proc.gpu_index, pid=proc.pid, what=what, user=proc.user))
    return HostStatus(name=name, deployments=rows, others=others,
                      gpus=[GpuUse(index=g.index, used_bytes=g.memory_used_bytes, total_bytes=g.memory_total_bytes)
                            for g in facts.gpus])
