"""Run a request: parse -> probe -> plan -> (approve) -> launch -> follow to ready or crash, told to a Thread.

The pipeline owns the per-host locks (two requests for one host's GPUs never race into an OOM); a risky plan waits
for an approver (bot/pipeline/approvals.py). Launching, watching and reading logs go through the host's backend
(bot/backends/): this module never sees a PID or a path, only the handle the backend gave.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable
from typing import TypeVar

from bot.backends.base import LaunchFailed
from bot.engine_figures import read_figures
from bot.engine_watch import watch_engine
from bot.logevents import DecodeStats
from bot.spec_report import speculation_line
from bot.events import (
    Crashed,
    Diagnosed,
    Failed,
    Info,
    Launched,
    Parsed,
    ParseFailed,
    Planned,
    PlanRejected,
    Ready,
    Thread,
)
from bot.follow import Follower
from bot.mentions import mention
from bot.models import GIB, DeployRequest, Deployment, HealingChain, HostFacts, LaunchPlan, ParseError, PlanFailure, PlanOverrides, utcnow
from bot.pipeline.base import PipelineBase
from bot.pipeline.types import Outcome, Requester, age_of
from bot.remote import HostUnreachable, RemoteError
from bot.tail import TAIL_BYTES
from planners.plan import choose_host, make_plan

T = TypeVar("T")


class RunMixin(PipelineBase):
    async def handle_text(self, text: str, thread: Thread, who: Requester = Requester(), *,
                          until_ready: bool = True) -> Outcome:
        parsed = await self.parse(text)
        if isinstance(parsed, ParseError):
            await thread.emit(ParseFailed(error=parsed))
            await self.store.audit("parse", actor=who.user, result="refused", detail=f"{parsed.kind}: {text[:200]}")
            return Outcome("bad_request", message=parsed.message)
        return await self.handle_request(parsed, thread, who, until_ready=until_ready)

    async def handle_request(self, request: DeployRequest, thread: Thread, who: Requester = Requester(), *,
                             until_ready: bool = True, note: str | None = None) -> Outcome:
        try:
            if request.action == "start":
                return await self.start(request, thread, who, until_ready=until_ready)
            if request.action == "stop":
                await thread.emit(Parsed(request=request, note=note))
                return await self.stop_request(request, thread, who)
            if request.action == "restart":
                await thread.emit(Parsed(request=request, note=note))
                return await self.restart(request, thread, who, until_ready=until_ready)
            if request.action == "status":
                await thread.emit(Parsed(request=request, note=note))
                return await self.status(request.host, thread)
            await thread.emit(Parsed(request=request, note=note))
            return await self.logs(request, thread)
        except RemoteError as exc:
            await thread.emit(Failed(message=str(exc)))
            await self.store.audit(request.action, actor=who.user, host=request.host, result="failed", detail=str(exc))
            return Outcome("failed", message=str(exc))

    async def reuse_last(self, request: DeployRequest) -> tuple[DeployRequest, PlanOverrides, str | None]:
        if not (request.reuse_last and request.host and request.model):
            return request, PlanOverrides(), None
        last = await self.store.last_successful(request.host, request.model)
        if last is None:
            return request, PlanOverrides(), f"no earlier successful deployment of {request.model} on {request.host}: planning afresh"
        plan = last.plan
        merged = request.model_copy(update={
            "engine": request.engine or plan.engine,
            "speculative": request.speculative or plan.speculative,
            "tp": request.tp or plan.tp,
            "port": request.port,
            "context_length": request.context_length or plan.context_length,
            "gpus": request.gpus or plan.gpus,
        })
        when = last.created_at.strftime("%Y-%m-%d %H:%M UTC")
        return merged, plan.overrides, f"same as before: reusing the plan of deployment {last.id} ({when}, TP {plan.tp}, {plan.engine})"

    async def start(self, request: DeployRequest, thread: Thread, who: Requester = Requester(), *,
                    until_ready: bool = True, overrides: PlanOverrides | None = None) -> Outcome:
        request, reused, note = await self.reuse_last(request)
        await thread.emit(Parsed(request=request, note=note))
        overrides = overrides or reused
        plan_or_failure = await self.plan(request, thread, overrides)
        if isinstance(plan_or_failure, PlanFailure):
            await thread.emit(PlanRejected(failure=plan_or_failure))
            await self.store.audit("plan", actor=who.user, host=request.host, result="rejected",
                                   detail=plan_or_failure.reason)
            return Outcome("rejected", message=plan_or_failure.reason)
        plan, facts = plan_or_failure
        reasons = self.approval_reasons(plan, facts)
        if reasons:
            decided = await self._ask_approval("launch", plan, reasons, thread, who, request=request, overrides=overrides)
            if decided is not True:
                return decided
        return await self.launch_and_follow(plan, thread, who, until_ready=until_ready, facts=facts)

    async def plan(self, request: DeployRequest, thread: Thread,
                    overrides: PlanOverrides) -> tuple[LaunchPlan, HostFacts] | PlanFailure:
        if request.host is None:
            candidates = [name for name, h in self.inventory().hosts.items() if request.model in h.models]
            if not candidates:
                return PlanFailure(reason=f"no host in the inventory holds {request.model}")
            facts_list = await asyncio.gather(*(self._probe(h, thread, request.model, request) for h in candidates),
                                              return_exceptions=True)
            facts_by_host = {}
            for host, facts in zip(candidates, facts_list):
                if isinstance(facts, BaseException):
                    await thread.emit(Info(message=f"{host} skipped: {facts}"))
                else:
                    facts_by_host[host] = facts
            if not facts_by_host:
                return PlanFailure(reason="none of the hosts that hold the model could be probed")
            chosen = choose_host(request, facts_by_host, self.config)
            if isinstance(chosen, PlanFailure):
                return chosen
            host, plan, why = chosen
            await thread.emit(Info(message=why, step="plan"))
            await thread.emit(Planned(plan=plan))
            return plan, facts_by_host[host]
        facts = await self._probe(request.host, thread, request.model, request, early=True)
        result = make_plan(request, facts, self.host_config(request.host), self.config.policy, overrides)
        if isinstance(result, LaunchPlan):
            await thread.emit(Planned(plan=result))
            return result, facts
        return result

    def approval_reasons(self, plan: LaunchPlan, facts: HostFacts) -> list[str]:
        policy = self.config.policy
        reasons = []
        if "shared_gpus" in policy.require_approval_for:
            for risk in plan.risks:
                if risk.code == "shared_gpu":
                    reasons.append(risk.message)
        if "thin_margin" in policy.require_approval_for and plan.per_gpu:
            margin = min(b.margin_bytes for b in plan.per_gpu)
            if margin < policy.min_margin_gib * GIB:
                reasons.append(f"memory margin {margin / GIB:.1f} GiB per GPU is under the policy's "
                               f"{policy.min_margin_gib:.1f} GiB")
        return reasons

    async def launch_and_follow(self, plan: LaunchPlan, thread: Thread, who: Requester = Requester(), *,
                                until_ready: bool = True, facts: HostFacts | None = None,
                                deployment_id: str | None = None, chain: HealingChain | None = None) -> Outcome:
        async with self.host_lock(plan.host):
            busy = await self._conflicting(plan)
            if busy is not None:
                await thread.emit(Failed(message=busy, step="launch"))
                await self.store.audit("launch", actor=who.user, host=plan.host, result="refused", detail=busy)
                return Outcome("rejected", message=busy)
            dep = Deployment(id=deployment_id or uuid.uuid4().hex[:10], host=plan.host, model=plan.model,
                             engine=plan.engine, port=plan.port, plan=plan, state="launching", requested_by=who.user,
                             channel=who.channel, thread_ts=who.thread_ts, chain=chain or HealingChain())
            # Recorded before the launch: a bot killed mid-launch finds it and checks the host's launch record.
            await self.store.save_deployment(dep)
            try:
                launched = await self.backend(plan.host).launch(plan, dep.id)
            except HostUnreachable as exc:
                # We cannot know whether the launch got through: the deployment stays "launching", and
                # `resume` (or the bot's restart) asks the host's launch record before anything starts again.
                message = (f"{exc}. The launch may or may not have started: deploybot checks the host's launch "
                           f"record when it can reach it again (deploybot resume, or on the bot's restart); "
                           f"nothing is launched twice.")
                await thread.emit(Failed(message=message, step="launch"))
                await self.store.audit("launch", actor=who.user, host=plan.host, deployment_id=dep.id,
                                       result="unknown", detail=str(exc))
                return Outcome("failed", dep, message)
            except (LaunchFailed, RemoteError) as exc:
                dep.state = "failed"
                await self.store.save_deployment(dep)
                await thread.emit(Failed(message=str(exc), step="launch"))
                await self.store.audit("launch", actor=who.user, host=plan.host, deployment_id=dep.id,
                                       result="failed", detail=str(exc))
                return Outcome("failed", dep, str(exc))
            dep.handle, dep.state = launched.handle, "starting"
            if not launched.already_launched:
                dep.log_offset = launched.log_offset
            await self.store.save_deployment(dep)
        await self.store.audit("launch", actor=who.user, host=plan.host, deployment_id=dep.id, result="launched",
                               detail=f"{launched.handle.label}: {' '.join(plan.argv)}")
        await thread.emit(Launched(deployment_id=dep.id, handle=launched.handle,
                                   already_running=launched.already_launched))
        return await self.follow(dep, thread, until_ready=until_ready, facts=facts)

    async def _conflicting(self, plan: LaunchPlan) -> str | None:
        """An active deployment holding any of the plan's GPUs or its port: who, what, since when."""
        for other in await self.store.active_deployments(plan.host):
            overlap = sorted(set(other.plan.gpus) & set(plan.gpus))
            if overlap or other.port == plan.port:
                what = f"GPU {'-'.join(map(str, (overlap[0], overlap[-1]))) if len(overlap) > 1 else overlap[0]}" if overlap else f"port {other.port}"
                age = age_of(other.created_at)
                by = mention(other.requested_by) if other.requested_by else "the terminal"
                return (f"{plan.host} {what}: {other.model} (deployment {other.id}, {other.state}), started by {by} "
                        f"{age} ago. Stop it first, or ask for other GPUs / another port.")
        return None

    async def follow(self, dep: Deployment, thread: Thread, *, until_ready: bool = True,
                     facts: HostFacts | None = None) -> Outcome:
        self.following.add(dep.id)
        try:
            return await self._follow(dep, thread, until_ready=until_ready, facts=facts)
        finally:
            self.following.discard(dep.id)

    async def _follow(self, dep: Deployment, thread: Thread, *, until_ready: bool,
                      facts: HostFacts | None) -> Outcome:
        slack = self.config.slack
        follower = Follower(self.backend(dep.host), self.store, thread, dep,
                            redact=self.redact, excerpt_interval_s=slack.excerpt_interval_s,
                            excerpt_max_lines=slack.excerpt_max_lines,
                            ready_timeout_s=self.config.policy.ready_timeout_s)
        first = follower.run(until_ready=until_ready or dep.state != "ready")
        outcome = await (self._while_watched(dep, thread, first) if dep.state == "ready" and not until_ready
                         else first)
        if outcome.state == "ready":
            dep.state, dep.ready_at = "ready", utcnow()
            await self.store.update_deployment(dep.id, state="ready", ready_at=dep.ready_at)
            measured = await self._measured(dep)
            host = self.host_config(dep.host)
            endpoint = f"http://{host.address}:{dep.port}"
            await thread.emit(Ready(endpoint=endpoint, seconds=outcome.seconds, kv_tokens=outcome.kv_tokens,
                                    measured=measured))
            await self._speculation(dep, outcome.last_decode, facts, thread)
            await self.store.audit("ready", host=dep.host, deployment_id=dep.id, result="ready",
                                   detail=f"{endpoint} in {outcome.seconds:.0f} s")
            if not until_ready:
                # The bot keeps watching a ready server: a later crash is reported in its thread too.
                outcome = await self._while_watched(dep, thread, follower.run(until_ready=False))
            else:
                return Outcome("ready", dep)
        if outcome.state == "lost":
            return Outcome("lost", dep, "lost the link to the host")
        current = await self.store.get_deployment(dep.id)
        if current is not None and current.state in ("stopping", "stopped"):
            return Outcome("stopped", current, "stopped on request")  # an intended stop is not a crash
        return await self._crashed(dep, outcome.exit_code, thread, facts, until_ready=until_ready)

    async def _while_watched(self, dep: Deployment, thread: Thread, following: Awaitable[T]) -> T:
        """Follow a ready server while its engine's /metrics are read now and then (bot/engine_watch.py)."""
        interval = self.config.policy.engine_watch_interval_s
        if not interval:
            return await following
        watcher = asyncio.create_task(watch_engine(self.remotes.get(dep.host), self.host_config(dep.host).python,
                                                   dep, thread, interval), name=f"watch:{dep.id}")
        try:
            return await following
        finally:
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)

    async def _speculation(self, dep: Deployment, decode: DecodeStats | None, facts: HostFacts | None,
                           thread: Thread) -> None:
        """A drafter plan's accept length and rate once ready (bot/spec_report.py); MTP plans keep their story."""
        if dep.plan.draft_model is None:
            return
        figures = None
        if decode is None or decode.accept_len is None:
            host = self.host_config(dep.host)
            figures = (await read_figures(self.remotes.get(dep.host), host.python, [dep.port])).get(dep.port)
        folder = next((f for f in (facts.drafters if facts else []) if f.name == dep.plan.draft_model), None)
        line = speculation_line(dep.plan, decode, figures, folder)
        if line:
            await thread.emit(Info(message=line, step="ready"))

    async def _measured(self, dep: Deployment) -> str | None:
        """Predicted vs measured GPU memory once ready (one probe round trip)."""
        try:
            facts = await self.backend(dep.host).probe()
        except RemoteError:
            return None
        used = [g.memory_used_bytes for g in facts.gpus if g.index in dep.plan.gpus]
        if not used or not dep.plan.per_gpu:
            return None
        budget = dep.plan.per_gpu[0]
        return (f"planned {budget.weights_bytes / GIB:.1f} GiB weights + {budget.kv_bytes / GIB:.1f} GiB KV per GPU; "
                f"measured {max(used) / GIB:.1f} GiB used (max over GPUs {','.join(map(str, dep.plan.gpus))})")

    async def _crashed(self, dep: Deployment, exit_code: int | None, thread: Thread,
                       facts: HostFacts | None, *, until_ready: bool = True) -> Outcome:
        served_s = (utcnow() - dep.ready_at).total_seconds() if dep.ready_at is not None else None
        dep.state, dep.exit_code = "crashed", exit_code
        dep.log_offset = (await self.store.get_deployment(dep.id) or dep).log_offset
        tail = ""
        if dep.handle is not None:
            try:
                tail = await self.backend(dep.host).tail(dep.handle, TAIL_BYTES)
            except RemoteError:
                tail = ""
        tail = self.redact(tail)
        diagnosis = await self.diagnoser.diagnose(tail, exit_code=exit_code, engine=dep.engine, plan=dep.plan,
                                                  facts=facts, secrets=self.secrets.values(), ended=True)
        dep.diagnosis = diagnosis
        await self.store.save_deployment(dep)
        await thread.emit(Crashed(exit_code=exit_code, tail=tail.splitlines()[-15:], served_s=served_s))
        await thread.emit(Diagnosed(diagnosis=diagnosis))
        await self.store.audit("crash", host=dep.host, deployment_id=dep.id, result=diagnosis.category,
                               detail=diagnosis.cause)
        healed = await self.heal(dep, diagnosis, thread, served=served_s is not None, until_ready=until_ready)
        if healed is not None:
            return healed
        if diagnosis.fix is not None and "fix_relaunch" in self.config.policy.require_approval_for \
                and self.approver is None:
            await self.offer_fix(dep, thread)
        return Outcome("crashed", dep, diagnosis.cause)

    async def resumable_deployments(self) -> list[Deployment]:
        """What a bot starting again takes up (`resume` each): the deployments the store says are active, and the
        crashed ones whose restart by policy was planned and not launched, on the hosts app.yaml still has."""
        deployments = await self.store.active_deployments() + await self.store.pending_restarts()
        return [dep for dep in deployments if dep.host in self.config.hosts]

    async def resume(self, dep: Deployment, thread: Thread, *, until_ready: bool = False) -> Outcome:
        """Re-attach to a deployment the store says was launching, starting or ready, or take up the restart the
        policy planned for a crashed one (`resume_restart`, bot/pipeline/healing.py).

        A launch cut off mid-way is checked on the host first: the launch agent, given the same deployment id,
        returns the existing launch record instead of starting a second server. Following resumes at the byte
        offset saved after the last excerpt posted, so nothing is lost or posted twice; a server that died while
        the bot was away is reported as crashed, with its diagnosis.
        """
        if dep.state == "crashed" and dep.chain.pending_restart is not None:
            return await self.resume_restart(dep, thread, until_ready=until_ready)
        if dep.handle is None:
            try:
                launched = await self.backend(dep.host).launch(dep.plan, dep.id)
            except (LaunchFailed, RemoteError) as exc:
                dep.state = "failed"
                await self.store.save_deployment(dep)
                await thread.emit(Failed(message=f"resume of {dep.id}: {exc}", step="launch"))
                return Outcome("failed", dep, str(exc))
            dep.handle = launched.handle
            if not launched.already_launched:
                dep.log_offset = launched.log_offset
            dep.state = "starting"
            await self.store.save_deployment(dep)
            await thread.emit(Launched(deployment_id=dep.id, handle=launched.handle,
                                       already_running=launched.already_launched))
        await thread.emit(Info(message=f"resumed following {dep.model} on {dep.host} ({dep.handle.label}) "
                                       f"from byte {dep.log_offset} of its log"))
        await self.store.audit("resume", host=dep.host, deployment_id=dep.id, result=dep.state)
        return await self.follow(dep, thread, until_ready=until_ready)
