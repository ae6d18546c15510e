"""From a crash to a healthy server without anyone typing flags, within the limits app.yaml's policy sets (issue 17).

After a crash and its diagnosis, `heal` decides what happens without a person:
- a crash before ready whose category is in `policy.auto_fix`, with a fix from the diagnoser: re-probe, re-plan
  with the fix, relaunch and follow, told in the thread and audited; at most `max_auto_relaunches` times per
  request, and never a plan already tried (a fix that gives one again is no fix);
- a death after ready with `policy.restart_on_crash`: after a back-off, a fresh probe and the same plan again (or
  the diagnoser's fix when `auto_fix` allows its category), at most `max_restarts_per_hour` per request.
Otherwise it returns None, and the caller puts the fix behind an approval as before the policy existed.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from datetime import timedelta

from bot.config import HealingPolicy
from bot.events import Info, Thread
from bot.models import Deployment, Diagnosis, HealingChain, HostFacts, LaunchPlan, PlanFailure, PlanOverrides, utcnow
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
        recent = [when for when in chain.restarts if now - when < RESTART_WINDOW]
        if len(recent) >= policy.max_restarts_per_hour:
            await thread.emit(Info(message=(
                f"policy restart_on_crash: {len(recent)} restart(s) in the last hour (max_restarts_per_hour "
                f"{policy.max_restarts_per_hour}); not restarting again"), step="ready"))
            return None
        wait_s = policy.restart_backoff_s * 2 ** len(recent)
        fixable = diagnosis.fix is not None and diagnosis.category in policy.auto_fix
        how = f"with the fix for {diagnosis.category}" if fixable else "with the same plan"
        await thread.emit(Info(message=f"policy restart_on_crash: restarting {how} in {wait_s:.0f} s", step="ready"))
        await asyncio.sleep(wait_s)
        planned = await (self._fixed_plan(dep, diagnosis, thread) if fixable else self._same_plan(dep, thread))
        if isinstance(planned, Outcome):
            return planned
        plan, facts = planned
        await self.store.audit("auto_restart", host=dep.host, deployment_id=dep.id, result=diagnosis.category,
                               detail=f"restart {len(recent) + 1} in the last hour; {how}")
        next_chain = chain.model_copy(update={"restarts": [*recent, now],
                                              "tried_plans": [*chain.tried_plans, launch_key(plan)]})
        return await self.launch_and_follow(plan, thread, _requester(dep), until_ready=until_ready, facts=facts,
                                            chain=next_chain)

    async def _fixed_plan(self, dep: Deployment, diagnosis: Diagnosis,
                          thread: Thread) -> tuple[LaunchPlan, HostFacts] | Outcome:
        assert diagnosis.fix is not None
        return await self._planned(dep, merge_overrides(dep.plan.overrides, diagnosis.fix.overrides), thread)

    async def _same_plan(self, dep: Deployment, thread: Thread) -> tuple[LaunchPlan, HostFacts] | Outcome:
        return await self._planned(dep, dep.plan.overrides, thread)

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
