"""The lifecycle every backend passes (bot/backends/base.py): probe, launch -> handle, watch to ready, tail, relaunch
idempotent, resume after the bot restarts, stop confirmed.

It runs for the process backend over a real sshd (tests/sshd.py) and locally, and for `ScratchBackend` below: a
backend written for this test that runs the engine another way (no agents on the host: a `sh` supervisor started
straight from the bot's machine, the log read and /health asked from here). It is registered by one line in
`BACKENDS`, the way a real one is (bot/backends/registry.py), so the contract shows what adding a backend costs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.backends.base import Backend, Exited, Health, Heartbeat, Launch, LogLine, StopReport, WatchEvent
from bot.backends.registry import BACKENDS, BackendPool
from bot.config import HostConfig, parse_config
from bot.discovery import Discovery
from bot.events import Info, Launched, LogExcerpt, RecordingThread, Stopped
from bot.handles import Handle, ProcessHandle
from bot.models import Deployment, DeployRequest, HostFacts, LaunchPlan
from bot.pipeline import Pipeline, Requester
from bot.probe import probe
from bot.remote import LocalRemote, RemotePool
from bot.store import Store
from bot.tail import read_tail
from planners.plan import make_plan
from tests.procs import pid_alive

MODEL = "Qwen3.6-27B"
WATCH_TIMEOUT_S = 60.0


# ------------------------------------------------------------------------------------------ the scratch backend


class ScratchBackend:
    """A detached engine under a `sh` supervisor on this machine, watched from the bot's side (no follow agent)."""

    kind = "scratch"

    def __init__(self, host: str, config: HostConfig, remotes: RemotePool) -> None:
        self.host, self.config, self.log_dir = host, config, Path(os.path.expanduser(config.log_dir))

    async def probe(self, *, model: str | None = None, draft_model: str | None = None,
                    drafters: bool = False) -> HostFacts:
        return await probe(LocalRemote(self.host), self.host, self.config, model=model, draft_model=draft_model,
                           drafters=drafters)

    async def engine_help(self, engines: list[str]) -> dict[str, str]:
        return {}

    async def launch(self, plan: LaunchPlan, deployment_id: str) -> Launch:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        key, record = plan.deployment_key, self.log_dir / f"{plan.deployment_key}.scratch.json"
        if record.exists() and json.loads(record.read_text())["deployment_id"] == deployment_id:
            handle = ProcessHandle.model_validate_json(json.loads(record.read_text())["handle"])
            return Launch(handle=handle, already_launched=True, already_running=pid_alive(handle.pid))
        log, exit_file = self.log_dir / f"{key}.log", self.log_dir / f"{key}.exit"
        exit_file.unlink(missing_ok=True)
        with open(log, "ab") as out:
            offset = out.tell()
            proc = subprocess.Popen(["sh", "-c", '"$@"; echo $? > "$0"', str(exit_file), *plan.argv],
                                    stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env={**os.environ, **plan.env}, start_new_session=True)
        handle = ProcessHandle(pid=proc.pid, pgid=proc.pid, key=key, log_path=str(log), exit_path=str(exit_file),
                               port=plan.port)
        record.write_text(json.dumps({"deployment_id": deployment_id, "handle": handle.model_dump_json()}))
        return Launch(handle=handle, log_offset=offset)

    async def watch(self, handle: Handle, *, offset: int) -> AsyncIterator[WatchEvent]:
        assert isinstance(handle, ProcessHandle)
        status, pending = None, b""
        while True:
            with open(handle.log_path, "rb") as log:
                log.seek(offset + len(pending))
                pending += log.read()
            *lines, pending = pending.split(b"\n")
            for line in lines:
                offset += len(line) + 1
                yield LogLine(text=line.decode(errors="replace"), offset=offset)
            if (now := await asyncio.to_thread(_health, handle.port)) != status:
                status = now
                yield Health(status=now)
            if not pid_alive(handle.pid) and not lines:
                code = Path(handle.exit_path or "").read_text().strip() if Path(handle.exit_path or "").exists() else ""
                yield Exited(code=int(code) if code else None)
                return
            yield Heartbeat()
            await asyncio.sleep(0.2)

    async def stop(self, handle: Handle, *, grace_s: float) -> StopReport:
        assert isinstance(handle, ProcessHandle) and handle.pgid is not None
        was_running = pid_alive(handle.pid)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(handle.pgid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while pid_alive(handle.pid) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        killed = pid_alive(handle.pid)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(handle.pgid, signal.SIGKILL)
        holders = [f"port {handle.port} is still open"] if await asyncio.to_thread(_health, handle.port) else []
        return StopReport(stopped=not pid_alive(handle.pid), was_running=was_running, killed=killed, holders=holders)

    async def tail(self, handle: Handle, max_bytes: int) -> str:
        return read_tail(handle.log_path, max_bytes)


def _free_port() -> int:
    """A port in the policy's range (30000-30999) that nothing listens on now, away from its crowded start."""
    for port in random.sample(range(30600, 31000), 400):
        with socket.socket() as probe_socket:
            if probe_socket.connect_ex(("127.0.0.1", port)) != 0:
                return port
    raise RuntimeError("no free port in 30600-30999")


def _health(port: int | None) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1.5) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


# ------------------------------------------------------------------------------------------ the cases


@pytest.fixture(params=["process-ssh", "process-local", "scratch"])
def case(request, simhost, monkeypatch, tmp_path):
    """(backend kind, host config) for each backend the contract runs on."""
    if request.param == "process-ssh":
        sshd = request.getfixturevalue("sshd")
        entry = {**simhost.host_config(), **sshd.host_overrides(), "transport": "ssh"}
    else:
        entry = simhost.host_config()
    if request.param == "scratch":
        monkeypatch.setitem(BACKENDS, "scratch", ScratchBackend)  # the one line that adds a backend
    config = parse_config({"hosts": {"CT129": entry}, "policy": {"min_margin_gib": 0.5}})
    return request.param.split("-")[0], config


def _backend(kind: str, config, remotes: RemotePool) -> Backend:
    """The host's backend as the pipeline gets it: the registry's factory for `kind`, through a BackendPool."""
    return BackendPool(config.hosts, remotes, {"process": BACKENDS[kind]}).get("CT129")


async def _watch_until(backend: Backend, handle: Handle, offset: int, done) -> list[WatchEvent]:
    """The events of one watch from ``offset`` until ``done(events)`` says enough (the stream is then closed)."""
    events: list[WatchEvent] = []

    async def read() -> None:
        async with contextlib.aclosing(backend.watch(handle, offset=offset)) as stream:
            async for event in stream:
                events.append(event)
                if done(events):
                    return

    await asyncio.wait_for(read(), WATCH_TIMEOUT_S)
    return events


def _ready(events: list[WatchEvent]) -> bool:
    return any(isinstance(e, Health) and e.status == 200 for e in events) and any(
        isinstance(e, LogLine) and "The server is fired up and ready to roll!" in e.text for e in events)


async def test_every_backend_passes_the_same_lifecycle(case, tmp_path):
    kind, config = case
    remotes = RemotePool(config.hosts)
    backend = _backend(kind, config, remotes)
    assert isinstance(backend, Backend) and backend.host == "CT129"
    facts = await backend.probe(model=MODEL)
    assert len(facts.gpus) == 2 and facts.model is not None and facts.model.exists
    # A port of its own: other suites on this machine start servers on the first ports of the range.
    request = DeployRequest(action="start", model=MODEL, host="CT129", port=_free_port())
    plan = make_plan(request, facts, config.hosts["CT129"], config.policy)
    assert isinstance(plan, LaunchPlan), plan
    launch = await backend.launch(plan, "contract1")
    handle = launch.handle
    assert not launch.already_launched and handle.label and handle.port == plan.port
    try:
        # Watch to ready: the engine's ready line and /health 200, each line with the byte offset after it.
        events = await _watch_until(backend, handle, launch.log_offset, _ready)
        lines = [e for e in events if isinstance(e, LogLine)]
        log_bytes = Path(handle.log_path).read_bytes()  # the simulated host is this machine, over ssh too
        assert lines[-1].offset <= len(log_bytes)
        assert log_bytes[launch.log_offset:lines[-1].offset].decode().splitlines() == [e.text for e in lines]
        assert not any(isinstance(e, Exited) for e in events)
        # Tail: the end of the same log, from a line boundary.
        tail = await backend.tail(handle, 4096)
        assert tail and lines[-1].text in Path(handle.log_path).read_text() and tail.splitlines()[-1].strip()
        # Relaunch of the same deployment: the same handle, nothing new started.
        again = await backend.launch(plan, "contract1")
        assert again.already_launched and again.already_running and again.handle == handle
        # The bot restarts: a fresh backend, the handle from the store's JSON, the watch resumes at the saved offset.
        stored = Deployment(id="contract1", host="CT129", model=MODEL, engine=plan.engine, port=plan.port, plan=plan,
                            handle=handle, log_offset=lines[-1].offset)
        restored = Deployment.model_validate_json(stored.model_dump_json())
        assert restored.handle == handle and restored.handle.label == handle.label
        await remotes.close()
        remotes = RemotePool(config.hosts)
        backend = _backend(kind, config, remotes)
        resumed = await _watch_until(backend, restored.handle, restored.log_offset,
                                     lambda evs: sum(isinstance(e, LogLine) for e in evs) >= 2)
        after = [e for e in resumed if isinstance(e, LogLine)]
        log_bytes = Path(handle.log_path).read_bytes()
        assert log_bytes[restored.log_offset:after[-1].offset].decode().splitlines() == [e.text for e in after]
    finally:
        # Stop, confirmed by the backend; the watch then ends with Exited.
        report = await backend.stop(handle, grace_s=10)
        await remotes.close()
    assert report.stopped and report.was_running and report.confirmed, report
    remotes = RemotePool(config.hosts)
    try:
        ended = await _watch_until(_backend(kind, config, remotes), handle, 0,
                                   lambda evs: isinstance(evs[-1], Exited))
    finally:
        await remotes.close()
    assert isinstance(ended[-1], Exited)
    if isinstance(handle, ProcessHandle):
        assert not pid_alive(handle.pid)


async def test_the_pipeline_runs_on_the_scratch_backend_and_resumes_after_a_restart(simhost, tmp_path, monkeypatch):
    """The same pipeline, the scratch backend under it (no agent on the host): start to ready, the bot restarts and
    resumes following at the saved offset, stop confirmed; the story names the deployment by the handle's label."""
    monkeypatch.setitem(BACKENDS, "scratch", ScratchBackend)
    config = parse_config({"hosts": {"CT129": simhost.host_config()}, "policy": {"min_margin_gib": 0.5},
                           "slack": {"excerpt_interval_s": 0.1, "excerpt_max_lines": 50}})

    def pipeline() -> Pipeline:
        remotes = RemotePool(config.hosts)
        return Pipeline(config, store, remotes=remotes,
                        backends=BackendPool(config.hosts, remotes, {"process": BACKENDS["scratch"]}))

    store = Store(tmp_path / "state.db")
    first, thread = pipeline(), RecordingThread()
    try:
        outcome = await first.handle_text(f"start {MODEL} on CT129 port {_free_port()}", thread, Requester(user="U1"))
        assert outcome.state == "ready", outcome.message
        (launched,) = thread.of(Launched)
        dep = await store.get_deployment(outcome.deployment.id)
        assert dep.handle == launched.handle and dep.log_offset > 0
        assert not list(simhost.log_dir.glob("*.launch.json"))  # the launch agent never ran: this is the scratch one
    finally:
        await first.close()
    again, resumed = pipeline(), RecordingThread()
    saved = dep.log_offset  # the follower moves the deployment's offset on as it reads
    try:
        following = asyncio.ensure_future(again.resume(dep, resumed, until_ready=False))
        await asyncio.wait_for(_until(lambda: resumed.of(LogExcerpt)), WATCH_TIMEOUT_S)
        (note,) = [e for e in resumed.of(Info) if "resumed following" in e.message]
        assert f"({dep.handle.label}) from byte {saved}" in note.message
        stop = RecordingThread()
        await again.handle_text(f"stop {MODEL} on CT129", stop, Requester(user="U1"))
        (stopped,) = stop.of(Stopped)
        assert f"({dep.handle.label}) stopped cleanly; port {dep.port} closed" in stopped.message
        assert (await asyncio.wait_for(following, WATCH_TIMEOUT_S)).state == "stopped"
        log = Path(dep.handle.log_path).read_bytes()
        seen = [line for e in resumed.of(LogExcerpt) for line in e.lines]
        assert seen and log[saved:].decode().splitlines()[:len(seen)] == seen  # from the saved offset
    finally:
        await again.close()
        store.close()


async def _until(predicate) -> None:
    while not predicate():
        await asyncio.sleep(0.05)


async def test_discovery_probes_each_host_through_its_backend(simhost, tmp_path):
    """`serve`'s refresh and `deploybot host list` probe through the host's backend, as the pipeline does (a Slurm
    host's GPUs come from its scheduler, not from its login node)."""
    asked: list[str | None] = []

    class Counting(ScratchBackend):
        async def probe(self, *, model=None, draft_model=None, drafters=False) -> HostFacts:
            asked.append(model)
            return await super().probe(model=model)

    config = parse_config({"hosts": {"CT129": simhost.host_config()}})
    store, remotes = Store(tmp_path / "state.db"), RemotePool(config.hosts)
    try:
        views = await Discovery(config, store, remotes, BackendPool(config.hosts, remotes, {"process": Counting}))\
            .probe_hosts()
        assert asked == [None] and MODEL in views["CT129"].models
        assert MODEL in store.host_views_sync()["CT129"].models
    finally:
        await remotes.close()
        store.close()
