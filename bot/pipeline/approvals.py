"""Approvals: a risky action waits for an approver; an approval is one-shot, bound to the plan's hash, and
re-checked against a fresh probe when it is decided (the host may have changed since it was asked)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Literal

from bot.events import ApprovalDecided, ApprovalRequested, Info, Planned, PlanRejected, Thread
from bot.mentions import mention, plain
from bot.models import DeployRequest, Deployment, LaunchPlan, PlanFailure, PlanOverrides, utcnow
from bot.pipeline.base import PipelineBase
from bot.pipeline.types import Outcome, Requester, merge_overrides, request_of
from bot.remote import RemoteError
from planners.plan import make_plan


class ApprovalsMixin(PipelineBase):
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

    async def offer_fix(self, dep: Deployment, thread: Thread) -> Outcome | None:
        """Put the diagnoser's fix behind an approval: the message shows the argv diff."""
        assert dep.diagnosis is not None and dep.diagnosis.fix is not None
        overrides = merge_overrides(dep.plan.overrides, dep.diagnosis.fix.overrides)
        request = request_of(dep.plan)
        try:
            new_plan, _facts = await self.replan(dep, overrides)
        except RemoteError as exc:
            await thread.emit(Info(message=f"cannot offer the fix now: {exc}"))
            return None
        if isinstance(new_plan, PlanFailure):
            await thread.emit(Info(message=f"the suggested fix does not plan: {new_plan.reason}"))
            return None
        who = Requester(dep.requested_by, dep.channel, dep.thread_ts)
        reasons = [f"relaunch with the diagnoser's fix: {dep.diagnosis.fix.summary}"]
        result = await self._ask_approval("relaunch", new_plan, reasons, thread, who, request=request,
                                          overrides=overrides, deployment_id=dep.id, previous_argv=dep.plan.argv)
        return result if isinstance(result, Outcome) else None

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
