"""Orchestrates one request: parse -> probe -> plan -> (approve) -> launch -> follow, told to a Thread.

The pipeline owns the per-host locks (two requests for one host's GPUs never race into an OOM) and the approvals
(risky actions wait for an approver; an approval is bound to the plan's hash and re-checked against a fresh probe).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from collections.abc import Awaitable
from typing import Literal, Protocol, TypeVar

from bot.backends.base import Backend, LaunchFailed
from bot.backends.registry import BackendPool
from bot.config import AppConfig, HostConfig, Secrets
from bot.diagnose.runner import DiagnosisRunner
from bot.discovery import Discovery, parse_resolving
from bot.events import (
    ApprovalDecided,
    ApprovalRequested,
    Crashed,
    Diagnosed,
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
    Thread,
)
from bot.follow import Follower
from bot.engine_figures import figures_line, ready_figures
from bot.engine_watch import watch_engine
from bot.mentions import mention, plain
from bot.models import (
    DRAFTER_KINDS,
    GIB,
    DeployRequest,
    Deployment,
    HostFacts,
    LaunchPlan,
    ParseError,
    PlanFailure,
    PlanOverrides,
    utcnow,
)
from bot.redact import redact
from bot.remote import HostUnreachable, RemoteError, RemotePool
from bot.request import Inventory
from bot.store import Store
from bot.tail import TAIL_BYTES
from planners.plan import choose_host, make_plan

log = logging.getLogger(__name__)
T = TypeVar("T")


OutcomeState = Literal[
    "ready", "crashed", "lost", "rejected", "bad_request", "awaiting_approval", "denied", "stopped", "done", "failed",
]

#: Exit codes of `deploybot ask`: 0 ready (or done), 1 crashed / did not fit / failed, 2 bad request or config.
EXIT_CODES: dict[str, int] = {
    "ready": 0, "done": 0, "stopped": 0, "awaiting_approval": 0,
    "crashed": 1, "lost": 1, "rejected": 1, "failed": 1, "denied": 1,
    "bad_request": 2,
}


@dataclass
class Outcome:
    state: OutcomeState
    deployment: Deployment | None = None
    message: str | None = None

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.state]


@dataclass(frozen=True)
class Requester:
    """Who asked, and where the story is told (Slack channel and thread; None on the terminal)."""

    user: str | None = None
    channel: str | None = None
    thread_ts: str | None = None


class InteractiveApprover(Protocol):
    """A surface that can ask right now (the terminal's prompt); Slack uses stored approvals and buttons instead."""

    async def confirm(self, title: str, reasons: list[str], plan: LaunchPlan | None) -> bool: ...


class Pipeline:
    def __init__(
        self,
        config: AppConfig,
        store: Store,
        *,
        secrets: Secrets | None = None,
        remotes: RemotePool | None = None,
        approver: InteractiveApprover | None = None,
        diagnoser: DiagnosisRunner | None = None,
        backends: BackendPool | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.secrets = secrets or Secrets()
        self.remotes = remotes or RemotePool(config.hosts)
        #: Where each host's deployments run (app.yaml `backend:`): probe, launch, watch, stop, tail go through it.
        self.backends = backends or BackendPool(config.hosts, self.remotes)
        self.approver = approver
        self.discovery = Discovery(config, store, self.remotes)
        #: Diagnosis runs off the event loop under a deadline (bot/diagnose/runner.py).
        self.diagnoser = diagnoser or DiagnosisRunner()
        self._host_locks: dict[str, asyncio.Lock] = {}
        self.following: set[str] = set()  # ids of the deployments whose log is followed now (a metrics gauge)

    # ------------------------------------------------------------------ helpers

    def redact(self, text: str) -> str:
        return redact(text, self.secrets.values())

    def inventory(self) -> Inventory:
        """app.yaml's hosts with what each one's last probe saw (models; GPUs where app.yaml has no `gpus:`)."""
        views = self.store.host_views_sync()
        gpus = {host: desc for host, view in views.items() if (desc := view.gpu_description())}
        return Inventory.from_config(self.config, {h: v.models for h, v in views.items()}, gpus)

    async def parse(self, text: str) -> DeployRequest | ParseError:
        """Read a request; a name that does not resolve gets one probe of its host and a second reading."""
        parsed, _ = await parse_resolving(text, self.inventory, self.discovery)
        return parsed

    def host_lock(self, host: str) -> asyncio.Lock:
        return self._host_locks.setdefault(host, asyncio.Lock())

    def host_config(self, host: str) -> HostConfig:
        return self.config.hosts[host]

    def backend(self, host: str) -> Backend:
        return self.backends.get(host)

    async def _probe(self, host: str, thread: Thread, model: str | None,
                     request: DeployRequest | None = None) -> HostFacts:
        started = time.perf_counter()
        # the drafter folders only when a drafter is asked for (a backend without them serves everything else)
        drafting = request is not None and request.speculative in DRAFTER_KINDS
        extra = {"drafters": True, "draft_model": request.draft_model} if request and drafting else {}
        facts = await self.backend(host).probe(model=model, **extra)
        facts = await self._with_engine_help(host, facts)
        await self.discovery.record(facts)
        # Told without the engines' --help texts (about 110 KB, never shown): every event is redacted string by
        # string before it is rendered, and on these that took about 35 ms of CPU before the plan could start.
        told = facts.model_copy(update={"engine_help": {}}) if facts.engine_help else facts
        await thread.emit(Probed(facts=told, seconds=time.perf_counter() - started))
        return facts

    async def _with_engine_help(self, host: str, facts: HostFacts) -> HostFacts:
        """Attach each installed engine's `--help` (cached per host and version) so the planner validates flags."""
        helps: dict[str, str] = {}
        missing: list[str] = []
        for name, install in facts.engines.items():
            if install.version is None:
                continue
            cached = await self.store.engine_help(host, name, install.version)
            if cached is not None:
                helps[name] = cached
            else:
                missing.append(name)
        if missing:
            fetched = await self.backend(host).engine_help(missing)
            for name, text in fetched.items():
                version = facts.engines[name].version
                if text and version:
                    await self.store.save_engine_help(host, name, version, text)
                    helps[name] = text
        return facts.model_copy(update={"engine_help": helps}) if helps else facts

    # ------------------------------------------------------------------ entry points

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

    # ------------------------------------------------------------------ start

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
        facts = await self._probe(request.host, thread, request.model, request)
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

    async def _ask_approval(self, action: Literal["launch", "relaunch", "stop"], plan: LaunchPlan | None,
                            reasons: list[str], thread: Thread, who: Requester, *, request: DeployRequest | None,
                            overrides: PlanOverrides | None = None, deployment_id: str | None = None,
                            previous_argv: list[str] | None = None,
                            title: str | None = None) -> Literal[True] | Outcome:
        title = title or (f"{action} {plan.model} on {plan.host}" if plan else action)
        if self.approver is not None:
            if await self.approver.confirm(title, reasons, plan):
                await self.store.audit(f"approve_{action}", actor=who.user or "console", host=plan.host if plan else None,
                                       result="approved", detail=plain("; ".join(reasons)))
                return True
            await self.store.audit(f"approve_{action}", actor=who.user or "console", result="denied")
            return Outcome("denied", message="not approved")
        approval_id = uuid.uuid4().hex[:12]
        expires = utcnow() + timedelta(minutes=self.config.policy.approval_ttl_minutes)
        await self.store.create_approval(
            approval_id, deployment_id=deployment_id, action=action, plan_hash=plan.plan_hash() if plan else None,
            requested_by=who.user, expires_at=expires,
            data={
                "request": request.model_dump(mode="json") if request else None,
                "overrides": (overrides or PlanOverrides()).model_dump(mode="json"),
                "reasons": reasons, "channel": who.channel, "thread_ts": who.thread_ts,
                "previous_argv": previous_argv,
            },
        )
        await thread.emit(ApprovalRequested(approval_id=approval_id, action=action, title=title, reasons=reasons,
                                            plan=plan, previous_argv=previous_argv, requested_by=who.user,
                                            expires_at=expires))
        await self.store.audit(f"request_{action}", actor=who.user, host=plan.host if plan else None,
                               deployment_id=deployment_id, result="awaiting_approval", detail=plain("; ".join(reasons)))
        return Outcome("awaiting_approval", message=f"waiting for approval {approval_id}")

    # ------------------------------------------------------------------ launch and follow

    async def launch_and_follow(self, plan: LaunchPlan, thread: Thread, who: Requester = Requester(), *,
                                until_ready: bool = True, facts: HostFacts | None = None,
                                deployment_id: str | None = None) -> Outcome:
        async with self.host_lock(plan.host):
            busy = await self._conflicting(plan)
            if busy is not None:
                await thread.emit(Failed(message=busy, step="launch"))
                await self.store.audit("launch", actor=who.user, host=plan.host, result="refused", detail=busy)
                return Outcome("rejected", message=busy)
            dep = Deployment(id=deployment_id or uuid.uuid4().hex[:10], host=plan.host, model=plan.model,
                             engine=plan.engine, port=plan.port, plan=plan, state="launching", requested_by=who.user,
                             channel=who.channel, thread_ts=who.thread_ts)
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
                age = _age(other.created_at)
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
        return await self._crashed(dep, outcome.exit_code, thread, facts)

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
                       facts: HostFacts | None) -> Outcome:
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
                                                  facts=facts, secrets=self.secrets.values())
        dep.diagnosis = diagnosis
        await self.store.save_deployment(dep)
        await thread.emit(Crashed(exit_code=exit_code, tail=tail.splitlines()[-15:]))
        await thread.emit(Diagnosed(diagnosis=diagnosis))
        await self.store.audit("crash", host=dep.host, deployment_id=dep.id, result=diagnosis.category,
                               detail=diagnosis.cause)
        if diagnosis.fix is not None and "fix_relaunch" in self.config.policy.require_approval_for \
                and self.approver is None:
            await self.offer_fix(dep, thread)
        return Outcome("crashed", dep, diagnosis.cause)

    async def offer_fix(self, dep: Deployment, thread: Thread) -> Outcome | None:
        """Put the diagnoser's fix behind an approval: the message shows the argv diff."""
        assert dep.diagnosis is not None and dep.diagnosis.fix is not None
        overrides = _merge_overrides(dep.plan.overrides, dep.diagnosis.fix.overrides)
        request = _request_of(dep.plan)
        try:
            extra = {"drafters": True, "draft_model": dep.plan.draft_model} if dep.plan.draft_model else {}
            facts = await self.backend(dep.host).probe(model=dep.model, **extra)
            facts = await self._with_engine_help(dep.host, facts)
        except RemoteError as exc:
            await thread.emit(Info(message=f"cannot offer the fix now: {exc}"))
            return None
        new_plan = make_plan(request, facts, self.host_config(dep.host), self.config.policy, overrides)
        if isinstance(new_plan, PlanFailure):
            await thread.emit(Info(message=f"the suggested fix does not plan: {new_plan.reason}"))
            return None
        who = Requester(dep.requested_by, dep.channel, dep.thread_ts)
        reasons = [f"relaunch with the diagnoser's fix: {dep.diagnosis.fix.summary}"]
        result = await self._ask_approval("relaunch", new_plan, reasons, thread, who, request=request,
                                          overrides=overrides, deployment_id=dep.id, previous_argv=dep.plan.argv)
        return result if isinstance(result, Outcome) else None

    # ------------------------------------------------------------------ approvals

    async def decide(self, approval_id: str, user: str, approve: bool, thread: Thread, *,
                     until_ready: bool = False) -> Outcome:
        """An approver clicked. One-shot, bound to the plan's hash, re-checked against a fresh probe."""
        row = await self.store.get_approval(approval_id)
        policy = self.config.policy
        if row is None:
            return Outcome("failed", message="no such approval")
        if row["state"] != "pending":
            return Outcome("done", message=f"already {row['state']} by {row['decided_by']}")
        if user not in policy.approvers:
            await self.store.audit("approve", actor=user, result="refused", detail=f"{approval_id}: not an approver")
            return Outcome("denied", message=f"{mention(user)} is not an approver (policy.approvers in app.yaml)")
        if user == row["requested_by"] and not policy.self_approve:
            await self.store.audit("approve", actor=user, result="refused", detail=f"{approval_id}: own request")
            return Outcome("denied", message="you asked for this yourself; policy says someone else approves it")
        now = utcnow()
        if datetime.fromisoformat(row["expires_at"]) < now:
            if await self.store.decide_approval(approval_id, "expired", None):
                await thread.emit(ApprovalDecided(approval_id=approval_id, decision="expired", decided_at=now))
            return Outcome("denied", message="this approval expired; ask again")
        decision: Literal["approved", "denied"] = "approved" if approve else "denied"
        if not await self.store.decide_approval(approval_id, decision, user):
            return Outcome("done", message="someone else decided first")  # a double click, or two approvers at once
        await self.store.audit(f"{decision}_{row['action']}", actor=user, deployment_id=row["deployment_id"],
                               result=decision, detail=approval_id)
        await thread.emit(ApprovalDecided(approval_id=approval_id, decision=decision, decided_by=user, decided_at=now))
        if not approve:
            return Outcome("denied", message=f"denied by {user}")
        data = row["data"]
        who = Requester(row["requested_by"], data.get("channel"), data.get("thread_ts"))
        if row["action"] == "stop":
            dep = await self.store.get_deployment(row["deployment_id"]) if row["deployment_id"] else None
            if dep is None:
                return Outcome("failed", message="the deployment to stop is gone")
            stopped = await self._stop_one(dep, thread, who)
            asked = data.get("request") or {}
            if asked.get("action") != "restart" or dep.state != "stopped":
                return stopped
            return await self._start_again(DeployRequest.model_validate(asked), dep, thread, who,
                                           until_ready=until_ready)
        request = DeployRequest.model_validate(data["request"])
        overrides = PlanOverrides.model_validate(data["overrides"])
        host = request.host
        assert host is not None
        facts = await self._probe(host, thread, request.model, request)
        plan = make_plan(request, facts, self.host_config(host), policy, overrides)
        if isinstance(plan, PlanFailure):
            await thread.emit(PlanRejected(failure=plan))
            return Outcome("rejected", message=plan.reason)
        if plan.plan_hash() != row["plan_hash"]:
            # Something material changed since the request (GPUs taken, port used, engine upgraded): ask again.
            await self.store.supersede_approval(approval_id)
            await thread.emit(Info(message="the host changed since this was asked (new plan below); approve again"))
            await thread.emit(Planned(plan=plan))
            result = await self._ask_approval(row["action"], plan, data.get("reasons", []), thread, who,
                                              request=request, overrides=overrides,
                                              deployment_id=row["deployment_id"], previous_argv=data.get("previous_argv"))
            return result if isinstance(result, Outcome) else Outcome("awaiting_approval")
        if row["action"] == "relaunch" and row["deployment_id"]:
            old = await self.store.get_deployment(row["deployment_id"])
            if old is not None and old.state in ("starting", "ready", "launching"):
                await self._stop_one(old, thread, who)
        return await self.launch_and_follow(plan, thread, who, until_ready=until_ready, facts=facts)

    # ------------------------------------------------------------------ resume after a restart of the bot

    async def resume(self, dep: Deployment, thread: Thread, *, until_ready: bool = False) -> Outcome:
        """Re-attach to a deployment the store says was launching, starting or ready.

        A launch cut off mid-way is checked on the host first: the launch agent, given the same deployment id,
        returns the existing launch record instead of starting a second server. Following resumes at the byte
        offset saved after the last excerpt posted, so nothing is lost or posted twice; a server that died while
        the bot was away is reported as crashed, with its diagnosis.
        """
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

    # ------------------------------------------------------------------ stop, restart, status, logs

    async def _targets(self, request: DeployRequest) -> list[Deployment]:
        deployments = await self.store.active_deployments(request.host)
        # A port names one server when the same model runs twice on a host (a thread's `stop` acts on its own).
        return [d for d in deployments if (request.model is None or d.model == request.model)
                and (request.port is None or d.port == request.port)]

    async def stop_request(self, request: DeployRequest, thread: Thread, who: Requester) -> Outcome:
        targets = await self._targets(request)
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

    async def _stop_one(self, dep: Deployment, thread: Thread, who: Requester) -> Outcome:
        if dep.handle is None:
            message = (f"{dep.model} on {dep.host}: its launch never answered, so deploybot does not know what runs; "
                       f"resume it first (deploybot resume) to learn, then stop it")
            await thread.emit(Stopped(deployment_id=dep.id, message=message))
            return Outcome("stopped", dep, message)
        previous_state = dep.state
        # Marked first: the follower that sees the process end must know it was asked to.
        await self.store.update_deployment(dep.id, state="stopping")
        # The backend confirms the stop (for a process: its PID holds no GPU memory and its port is closed).
        report = await self.backend(dep.host).stop(dep.handle, grace_s=self.config.policy.stop_grace_s)
        dep.state = "stopped" if report.stopped else previous_state
        await self.store.update_deployment(dep.id, state=dep.state)
        if report.confirmed:
            how = "killed after the grace period" if report.killed else "stopped cleanly"
            freed = ", ".join(f"GPU {index} {used / GIB:.1f} GiB used" for index, used in report.gpu_used_bytes.items()
                              if index in dep.plan.gpus)
            message = (f"{dep.model} on {dep.host} ({dep.handle.label}) {how}; port {dep.port} closed"
                       + (f"; {freed}" if freed else ""))
        else:
            message = f"{dep.model} on {dep.host}: stop incomplete: " + "; ".join(report.holders)
        await self.store.audit("stop", actor=who.user, host=dep.host, deployment_id=dep.id,
                               result="stopped" if report.stopped else "incomplete", detail=message)
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

    async def status(self, host: str | None, thread: Thread) -> Outcome:
        hosts = [host] if host else list(self.config.hosts)
        actives = {h: await self.store.active_deployments(h) for h in hosts}
        # The engines' own /metrics are read while the hosts are probed (both one round trip per host).
        results, live = await asyncio.gather(
            asyncio.gather(*(self.backend(h).probe() for h in hosts), return_exceptions=True),
            asyncio.gather(*(ready_figures(self.remotes.get(h), self.host_config(h).python, actives[h]) for h in hosts)))
        figures = {dep_id: f for per_host in live for dep_id, f in per_host.items()}
        lines: list[str] = []
        for name, facts in zip(hosts, results):
            if isinstance(facts, BaseException):
                lines.append(f"{name}: unreachable ({facts})")
                continue
            gpus = ", ".join(f"GPU {g.index} {g.memory_used_bytes / GIB:.1f}/{g.memory_total_bytes / GIB:.1f} GiB"
                             for g in facts.gpus) or "no GPUs seen"
            lines.append(f"{name}: {gpus}")
            active = actives[name]
            for dep in active:
                gpu_list = dep.plan.gpus
                span = f"{gpu_list[0]}-{gpu_list[-1]}" if len(gpu_list) > 1 else str(gpu_list[0]) if gpu_list else "?"
                by = mention(dep.requested_by) if dep.requested_by else "the terminal"
                where = f", {dep.handle.label}" if dep.handle else ""
                lines.append(f"  {name} GPU {span}: {dep.model} ({dep.state}, port {dep.port}{where}), "
                             f"started by {by} {_age(dep.created_at)} ago")
                if dep.id in figures:
                    lines.append(f"    {figures_line(figures[dep.id])}")
            for proc in facts.gpu_processes:
                if any(d.handle is not None and d.handle.holds_process(proc.pid) for d in active):
                    continue
                what = f"{proc.server.engine} {proc.server.model_path} port {proc.server.port}" if proc.server else (proc.name or "process")
                lines.append(f"  GPU {proc.gpu_index}: PID {proc.pid} {what} (user {proc.user or '?'}, not started by deploybot)")
        await thread.emit(Info(message="\n".join(lines), step="probe"))
        return Outcome("done", message="\n".join(lines))

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
        await thread.emit(LogExcerpt(lines=tail[-lines:], omitted=max(0, len(tail) - lines)))
        return Outcome("done", dep)

    async def close(self) -> None:
        await self.remotes.close()
        await self.diagnoser.close()


def _age(when: datetime) -> str:
    seconds = (datetime.now(timezone.utc) - when).total_seconds()
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} days"


def _request_of(plan: LaunchPlan) -> DeployRequest:
    """The request that reproduces a plan (GPUs left to the planner: a fix may change the TP)."""
    return DeployRequest(action="start", model=plan.model, host=plan.host, engine=plan.engine,
                         speculative=plan.speculative, draft_model=plan.draft_model, tp=plan.tp, port=plan.port,
                         context_length=plan.overrides.context_length)


def _merge_overrides(base: PlanOverrides, change: PlanOverrides) -> PlanOverrides:
    merged = base.model_dump()
    for key, value in change.model_dump().items():
        if value not in (None, [], {}):
            merged[key] = value
    return PlanOverrides.model_validate(merged)
