"""Detached, idempotent launch (and stop) of an engine on a host, through the launch agent: one round trip each.

The process backend's calls to the launch agent (bot/backends/process.py); LaunchFailed lives in bot/backends/base.py."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from bot.backends.base import LaunchFailed
from bot.config import HostConfig
from bot.models import LaunchPlan
from bot.probe import run_agent
from bot.remote import HostUnreachable, Remote

#: A launch cut off by the network is retried: safe, because the launch agent is idempotent by deployment id
#: (a retry that finds the launch record of a first attempt that did get through returns it; nothing starts twice).
LAUNCH_ATTEMPTS = 3


class LaunchRecord(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    deployment_id: str
    plan_hash: str | None = None
    key: str
    pid: int
    pgid: int | None = None
    log_path: str
    log_offset: int = 0
    exit_path: str | None = None
    argv: list[str]
    started_at: float
    already_running: bool = False
    already_launched: bool = False


class StopResult(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    stopped: bool
    was_running: bool = False
    killed: bool = False
    pid: int | None = None
    message: str | None = None


async def launch(remote: Remote, host: HostConfig, plan: LaunchPlan, deployment_id: str) -> LaunchRecord:
    args = {
        "action": "launch",
        "deployment_id": deployment_id,
        "plan_hash": plan.plan_hash(),
        "key": plan.deployment_key,
        "log_dir": host.log_dir,
        "argv": plan.argv,
        "env": plan.env,
    }
    answer: dict = {}
    async for attempt in AsyncRetrying(retry=retry_if_exception_type(HostUnreachable),
                                       stop=stop_after_attempt(LAUNCH_ATTEMPTS),
                                       wait=wait_exponential(multiplier=0.5, max=4), reraise=True):
        with attempt:
            # The launch agent is standard library alone (the engine it starts is its own process, with its site).
            answer = await run_agent(remote, host.python, "launch_agent", args, timeout=60, site=False)
    if "error" in answer:
        raise LaunchFailed(f"{remote.host}: {answer['message']}")
    return LaunchRecord.model_validate(answer)


async def stop(remote: Remote, host: HostConfig, *, key: str, pid: int | None, pgid: int | None,
               grace_s: float) -> StopResult:
    args = {"action": "stop", "key": key, "log_dir": host.log_dir, "pid": pid, "pgid": pgid, "grace_s": grace_s}
    return StopResult.model_validate(await run_agent(remote, host.python, "launch_agent", args, timeout=grace_s + 30,
                                                     site=False))
