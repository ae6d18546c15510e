"""From a crash to a healthy server without anyone typing flags, within the limits app.yaml's policy sets (issue 17).

After a crash and its diagnosis, `heal` decides what happens without a person:
- a crash before ready whose category is in `policy.auto_fix`, with a fix from the diagnoser: re-probe, re-plan
  with the fix, relaunch and follow, told in the thread and audited; at most `max_auto_relaunches` times per
  request, and never a plan already tried (a fix that gives one again is no fix);
- a death after ready with `policy.restart_on_crash`: after a back-off, a fresh probe and the same plan again (or
  the diagnoser's fix when `auto_fix` allows its category), at most `max_restarts_per_hour` per request. The
  planned restart is stored on the crashed deployment (HealingChain.pending_restart) before the back-off, so a bot
  killed while it waits resumes it on start-up (`resume_restart`); a `stop` cancels it (bot/pipeline/ops.py).
Otherwise it returns None, and the caller puts the fix behind an approval as before the policy existed.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from datetime import datetime, timedelta

from bot.config import HealingPolicy
from bot.events import Info, Thread
from bot.models import (Deployment, Diagnosis, HealingChain, HostFacts, LaunchPlan, PendingRestart, PlanFailure,
                        PlanOverrides, utcnow)
from bot.pipeline.base import PipelineBase
from bot.pipeline.types import Outcome, Requester, merge_overrides
from bot.remote import RemoteError
from planners.argv import diff

#: A restart after a death in service counts against the per-hour limit for this long.
RESTART_WINDOW = timedelta(hours=1)


class HealingMixin(PipelineBase):
    def healing(self, host: str) -> HealingPolicy:
        return self.config.policy.healing_for(self.host_config(host))

    async def heal(self, dep: Deployment, diagnosis: Diagnosis, thread: Thread, *, served: bool,
                   until_ready: bool) -> Outcome | None:
        """What the policy lets the bot do about this crash by itself: the outcome of it, or None to ask."""
        policy = self.healing(dep.host)
        if served and policy.restart_on_crash:
            return await self._restart_after_service(dep, diagnosis, thread, policy, until_ready=until_ready)
        if not served and diagnosis.fix is not None and diagnosis.category in policy.auto_fix:
            return await self._auto_fix(dep, diagnosis, thread, policy, until_ready=until_ready)
        return None

    async def _auto_fix(self, dep: Deployment, diagnosis: Diagnosis, thread: Thread, policy: HealingPolicy, *,
                        until_ready: bool) -> Outcome | None:
        assert diagnosis.fix is not None
        chain = _chain_of(dep)
        if chain.auto_relaunches >= policy.max_auto_relaunches:
            await thread.emit(Info(message=(
                f"policy auto_fix: {chain.auto_relaunches} automatic relaunch(es) already made for this request "
                f"(max_auto_relaunches {policy.max_auto_relaunches}); the next fix waits for an approval")))
            return None
        planned = await self._fixed_plan(dep, diagnosis, thread)
        if isinstance(planned, Outcome):
            return planned
        plan, facts = planned
        if launch_key(plan) in chain.tried_plans:
            message = ("policy auto_fix: the fix gives a plan already tried in this request, so it is no fix; "
                       "not relaunching. Read the diagnosis above and change the request.")
            await thread.emit(Info(message=message))
            await self.store.audit("auto_relaunch", host=dep.host, deployment_id=dep.id, result="refused",
                                   detail="plan already tried")
            return Outcome("crashed", dep, message)
        change = "; ".join(_changes(dep.plan.argv, plan.argv) + _env_changes(dep.plan.env, plan.env)) \
            or "no change to the command line"
        await thread.emit(Info(message=f"relaunched automatically by policy auto_fix: {diagnosis.category}; {change}",
                               step="launch"))
        await self.store.audit("auto_relaunch", host=dep.host, deployment_id=dep.id, result=diagnosis.category,
                               detail=change)
        next_chain = chain.model_copy(update={"auto_relaunches": chain.auto_relaunches + 1,
                                              "tried_plans": [*chain.tried_plans, launch_key(plan)]})
        return await self.launch_and_follow(plan, thread, _requester(dep), until_ready=until_ready, facts=facts,
                                            chain=next_chain)

    async def _restart_after_service(self, dep: Deployment, diagnosis: Diagnosis, thread: Thread,
                                     policy: HealingPolicy, *, until_ready: bool) -> Outcome | None:
        chain = _chain_of(dep)
        now = utcnow()
        recent = _recent(chain, now)
        if len(recent) >= policy.max_restarts_per_hour:
            await self._restart_limit(len(recent), policy, thread)
            return None
        wait_s = policy.restart_backoff_s * 2 ** len(recent)
        fixable = diagnosis.fix is not None and diagnosis.category in policy.auto_fix
        pending = PendingRestart(due_at=now + timedelta(seconds=wait_s), planned_at=now, category=diagnosis.category,
                                 fix=diagnosis.fix.overrides if fixable and diagnosis.fix is not None else None)
        # Stored before the back-off starts: a bot killed while it waits finds it on start-up (resume_restart).
        dep.chain = chain.model_copy(update={"pending_restart": pending})
        await self.store.update_deployment(dep.id, chain=dep.chain)
        await self.store.audit("restart_planned", host=dep.host, deployment_id=dep.id, result=pending.category,
                               detail=f"{pending.how()} at {clock(pending.due_at)}")
        await thread.emit(Info(message=f"policy restart_on_crash: restarting {pending.how()} in {wait_s:.0f} s",
                               step="ready"))
        return await self._restart_when_due(dep, pending, thread, until_ready=until_ready)

    async def resume_restart(self, dep: Deployment, thread: Thread, *, until_ready: bool = False) -> Outcome:
        """Take up, after a restart of the bot, the restart the policy had planned for this crashed deployment:
        the rest of its back-off (none when past due), then as if the bot had never gone away."""
        pending = dep.chain.pending_restart
        assert pending is not None
        left_s = max(0.0, (pending.due_at - utcnow()).total_seconds())
        await thread.emit(Info(message=(
            f"resuming the restart policy restart_on_crash planned at {clock(pending.planned_at)} after "
            f"{pending.category}: restarting {dep.model} on {dep.host} {pending.how()} "
            + (f"in {left_s:.0f} s" if left_s else "now (it was due at " + clock(pending.due_at) + ")")),
            step="ready"))
        await self.store.audit("resume", host=dep.host, deployment_id=dep.id, result="pending_restart",
                               detail=f"{pending.how()}, due at {clock(pending.due_at)}")
        if not self.healing(dep.host).restart_on_crash:
            await self.store.take_pending_restart(dep.id)
            message = "policy restart_on_crash is off now for this host: not restarting"
            await thread.emit(Info(message=message, step="ready"))
            return Outcome("crashed", dep, message)
        return await self._restart_when_due(dep, pending, thread, until_ready=until_ready) \
            or Outcome("crashed", dep, "restart limit reached")

    async def _restart_when_due(self, dep: Deployment, pending: PendingRestart, thread: Thread, *,
                                until_ready: bool) -> Outcome | None:
        """Wait until the restart is due (a cancel of the task leaves it stored, for the next start-up), then
        re-plan and launch it unless a `stop` cancelled it meanwhile; taken off the store before it launches, so
        it never launches twice."""
        await asyncio.sleep(max(0.0, (pending.due_at - utcnow()).total_seconds()))
        current = await self.store.get_deployment(dep.id)
        if current is None or current.chain.pending_restart != pending:
            return self._cancelled(dep)
        policy = self.healing(dep.host)
        recent = _recent(current.chain, utcnow())
        if len(recent) >= policy.max_restarts_per_hour:
            await self.store.take_pending_restart(dep.id)
            await self._restart_limit(len(recent), policy, thread)
            return None
        overrides = merge_overrides(dep.plan.overrides, pending.fix) if pending.fix else dep.plan.overrides
        planned = await self._planned(dep, overrides, thread)
        if isinstance(planned, Outcome):
            await self.store.take_pending_restart(dep.id)
            return planned
        plan, facts = planned
        # The re-plan probed the host (seconds): a stop in that time still wins, and only one caller takes it.
        taken = await self.store.take_pending_restart(dep.id)
        if taken is None or taken.chain.pending_restart != pending:
            return self._cancelled(dep)
        await self.store.audit("auto_restart", host=dep.host, deployment_id=dep.id, result=pending.category,
                               detail=f"restart {len(recent) + 1} in the last hour; {pending.how()}")
        next_chain = current.chain.model_copy(update={"restarts": [*recent, utcnow()], "pending_restart": None,
                                                      "tried_plans": [*current.chain.tried_plans, launch_key(plan)]})
        return await self.launch_and_follow(plan, thread, _requester(dep), until_ready=until_ready, facts=facts,
                                            chain=next_chain)

    @staticmethod
    def _cancelled(dep: Deployment) -> Outcome:
        return Outcome("stopped", dep, "the restart planned by policy was cancelled by a stop")

    @staticmethod
    async def _restart_limit(count: int, policy: HealingPolicy, thread: Thread) -> None:
        await thread.emit(Info(message=(
            f"policy restart_on_crash: {count} restart(s) in the last hour (max_restarts_per_hour "
            f"{policy.max_restarts_per_hour}); not restarting again"), step="ready"))

    async def _fixed_plan(self, dep: Deployment, diagnosis: Diagnosis,
                          thread: Thread) -> tuple[LaunchPlan, HostFacts] | Outcome:
        assert diagnosis.fix is not None
        return await self._planned(dep, merge_overrides(dep.plan.overrides, diagnosis.fix.overrides), thread)

    async def _planned(self, dep: Deployment, overrides: PlanOverrides,
                       thread: Thread) -> tuple[LaunchPlan, HostFacts] | Outcome:
        """The re-plan on a fresh probe, or the crashed outcome when there is none: the caller stops there rather
        than offer the same fix behind an approval, which would probe and plan it a second time to the same end."""
        try:
            plan, facts = await self.replan(dep, overrides)
        except RemoteError as exc:
            message = f"cannot relaunch by policy now: {exc}"
        else:
            if not isinstance(plan, PlanFailure):
                return plan, facts
            message = f"the fix does not plan, so nothing is relaunched: {plan.reason}"
        await thread.emit(Info(message=message))
        return Outcome("crashed", dep, message)


def _recent(chain: HealingChain, now: datetime) -> list[datetime]:
    """The chain's restarts that still count against max_restarts_per_hour."""
    return [when for when in chain.restarts if now - when < RESTART_WINDOW]


def clock(when: datetime) -> str:
    """A pending restart's times as the thread shows them."""
    return when.strftime("%H:%M:%S UTC")


def _chain_of(dep: Deployment) -> HealingChain:
    """The deployment's chain, started from it when it is the first of its request."""
    chain = dep.chain
    if chain.root_id is None:
        chain = chain.model_copy(update={"root_id": dep.id})
    if launch_key(dep.plan) not in chain.tried_plans:
        chain = chain.model_copy(update={"tried_plans": [*chain.tried_plans, launch_key(dep.plan)]})
    return chain


def launch_key(plan: LaunchPlan) -> str:
    """What a launch really runs (host, command line, environment): two plans with the same key are the same try,
    whatever else differs in how they were reached."""
    text = json.dumps([plan.host, plan.argv, sorted(plan.env.items())])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _requester(dep: Deployment) -> Requester:
    return Requester(dep.requested_by, dep.channel, dep.thread_ts)


def _changes(old: list[str], new: list[str]) -> list[str]:
    """'--mem-fraction-static 0.86 -> 0.77' for a changed value, '+ --flag v' / '- --flag v' for the others."""
    lines = diff(old, new)
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if line.startswith("- ") and following.startswith("+ "):
            before, after = line[2:].split(" ", 1) + [""], following[2:].split(" ", 1) + [""]
            if before[0] == after[0]:
                out.append(f"{before[0]} {before[1] or '(on)'} -> {after[1] or '(on)'}")
                i += 2
                continue
        out.append(line)
        i += 1
    return out


def _env_changes(old: dict[str, str], new: dict[str, str]) -> list[str]:
    """Environment variables the fix sets, changes or drops ('+ env SGLANG_ENABLE_SPEC_V2=1')."""
    lines = [f"+ env {name}={value}" for name, value in new.items() if old.get(name) != value]
    return lines + [f"- env {name}" for name in old if name not in new]
