"""The process backend (`backend: process`, the default): a detached engine process on a host, over SSH or locally.

Today's agents do the work on the host, one round trip each: the probe agent (bot/probe.py), the launch agent
(bot/launch.py: a supervisor that writes the exit status next to the log; idempotent by deployment id), and the
follow agent (one long stream of log lines with byte offsets, health changes and the exit). The handle is a
`ProcessHandle`: PID, process group, launch key, log and exit file, as the launch agent recorded them.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import aclosing

from bot.backends.base import Exited, Launch, StopReport, WatchEvent, watch_event
from bot.config import HostConfig
from bot.handles import Handle, ProcessHandle
from bot.launch import launch as launch_agent
from bot.launch import stop as stop_agent
from bot.models import HostFacts, LaunchPlan
from bot.probe import agent_source, fetch_engine_help, probe
from bot.remote import Remote
from bot.tail import TAIL_BYTES

HEALTH_PATH = "/health"


class ProcessBackend:
    kind = "process"

    def __init__(self, host: str, config: HostConfig, remote: Remote) -> None:
        self.host = host
        self.config = config
        self.remote = remote

    async def probe(
        self, *, model: str | None = None, draft_model: str | None = None, drafters: bool = False
    ) -> HostFacts:
        return await probe(self.remote, self.host, self.config, model=model, draft_model=draft_model,
                           drafters=drafters)

    async def engine_help(self, engines: list[str]) -> dict[str, str]:
        return await fetch_engine_help(self.remote, self.config, engines)

    async def launch(self, plan: LaunchPlan, deployment_id: str) -> Launch:
        record = await launch_agent(self.remote, self.config, plan, deployment_id)
        handle = ProcessHandle(pid=record.pid, pgid=record.pgid, key=record.key, log_path=record.log_path,
                               exit_path=record.exit_path, port=plan.port)
        return Launch(handle=handle, log_offset=record.log_offset, already_launched=record.already_launched,
                      already_running=record.already_running)

    async def watch(self, handle: Handle, *, offset: int) -> AsyncIterator[WatchEvent]:
        proc = _process(handle)
        args = {"log_path": proc.log_path, "offset": offset, "pid": proc.pid, "exit_path": proc.exit_path,
                "port": proc.port, "health_path": HEALTH_PATH}
        command = [self.config.python, "-", json.dumps(args)]
        # aclosing: a caller that stops reading (ready reached) must end the agent's stream now, not at collection.
        async with aclosing(self.remote.stream(command, input=agent_source("follow_agent"))) as stream:
            async for raw in stream:
                event = watch_event(raw)
                if event is not None:
                    yield event
                if isinstance(event, Exited):
                    return

    async def stop(self, handle: Handle, *, grace_s: float) -> StopReport:
        """TERM the process group, KILL after the grace period, then confirm with a probe that the PID holds no
        GPU memory and the port is closed (one round trip each)."""
        proc = _process(handle)
        result = await stop_agent(self.remote, self.config, key=proc.key or "", pid=proc.pid, pgid=proc.pgid,
                                  grace_s=grace_s)
        facts = await self.probe()
        holders = []
        if not result.stopped:
            holders.append(result.message or f"{proc.label} still alive")
        if any(p.pid == proc.pid for p in facts.gpu_processes):
            holders.append(f"{proc.label} still holds GPU memory")
        if proc.port is not None and proc.port in facts.listening_ports:
            holders.append(f"port {proc.port} is still open")
        return StopReport(stopped=result.stopped, was_running=result.was_running, killed=result.killed,
                          holders=holders, gpu_used_bytes={g.index: g.memory_used_bytes for g in facts.gpus})

    async def tail(self, handle: Handle, max_bytes: int = TAIL_BYTES) -> str:
        return await fetch_tail(self.remote, handle.log_path, max_bytes)


def _process(handle: Handle) -> ProcessHandle:
    if not isinstance(handle, ProcessHandle):
        raise TypeError(f"the process backend was given a {type(handle).__name__}, not the ProcessHandle it makes")
    return handle


async def fetch_tail(remote: Remote, log_path: str, max_bytes: int = TAIL_BYTES) -> str:
    """The bounded end of a log on the host (never the whole file), from a line boundary: one round trip.

    ``tail -c`` starts wherever the byte count falls, often inside a line, and that partial first line can begin
    inside a token (the whole value nor its prefix is then there for redaction to find). So one byte more than the
    bound is read: when the file had more than that, the window's first line is cut and is dropped (if the extra
    byte is the newline, the next line is whole and nothing but it goes).
    """
    result = await remote.run(["tail", "-c", str(max_bytes + 1), log_path], timeout=30)
    return drop_partial_first_line(result.stdout, max_bytes)


def drop_partial_first_line(window: str, max_bytes: int) -> str:
    """``window`` (the last ``max_bytes + 1`` bytes of a file, decoded) without its first line when the file was
    longer than ``max_bytes``; a window without any newline (one giant line) keeps its last part as it is."""
    if len(window.encode("utf-8", "surrogatepass")) <= max_bytes:
        return window  # the whole file
    newline = window.find("\n")
    if newline == -1:
        return window[1:]
    return window[newline + 1:]

