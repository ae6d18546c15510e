"""Benchmark: from a request to the PID in the thread, against plain SSH doing the same two commands.

A real OpenSSH sshd on loopback fronts a simulated GPU host (2x RTX A6000). Each repeat:

- the bot: a fresh in-process `Pipeline` (a new SSH connection, as `deploybot ask` makes) handles
  "start Qwen3.6-27B on CT129 with stock MTP"; the clock stops at the `Launched` event (the PID). The request then
  runs on to ready and the server is stopped through the pipeline before the next repeat. The store is kept, so
  only the first request fetches the engine's `--help` (cached per engine version);
- the floor: plain asyncssh, one connection, the same probe agent, then the same argv started the way a person
  would by hand (`setsid nohup ARGV > LOG 2>&1 < /dev/null & echo $!`); the clock stops at the PID; then stopped.

The two alternate, so the machine's noise falls on both. Printed: medians (first request apart), the ratio, SSH
round trips and connections to the PID, and where the bot's time goes (probe, plan, launch). Also `deploybot ask`
run as a process (Python start-up and imports included), as a user at a terminal sees it.

    .venv/bin/python bench/bench_request_to_pid.py [--repeats 6] [--cli-runs 2] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import os
import pstats
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO, figure, note, ratio, require_sshd, sim_host, sshd_servers, summary  # noqa: E402

import asyncssh  # noqa: E402

from bot.config import AppConfig, HostConfig, Secrets, expand, parse_config  # noqa: E402
from bot.events import Event, Launched, Planned  # noqa: E402
from bot.models import LaunchPlan  # noqa: E402
from bot.pipeline import Pipeline, Requester  # noqa: E402
from bot.probe import agent_source  # noqa: E402
from bot.remote import remote_command  # noqa: E402
from bot.store import Store  # noqa: E402

HOST = "CT129"
MODEL = "Qwen3.6-27B"
REQUEST = f"start {MODEL} on {HOST} with stock MTP"
STOP = f"stop {MODEL} on {HOST}"
CLI_TIMEOUT_S = 60


@dataclass
class PidClock:
    """A Thread that notes when each kind of event first arrived, and the SSH round trips at the PID."""

    pipeline: Pipeline
    started: float = field(default_factory=time.perf_counter)
    at: dict[str, float] = field(default_factory=dict)
    round_trips_at_pid: int | None = None
    connects_at_pid: int | None = None
    plan: LaunchPlan | None = None

    async def emit(self, event: Event) -> None:
        self.at.setdefault(event.kind, time.perf_counter() - self.started)
        if isinstance(event, Planned):
            self.plan = event.plan
        if isinstance(event, Launched) and self.round_trips_at_pid is None:
            remote = self.pipeline.remotes.get(HOST)
            self.round_trips_at_pid = remote.round_trips
            self.connects_at_pid = getattr(remote, "connects", None)


class DiscardThread:
    async def emit(self, event: Event) -> None:
        return None


@dataclass
class BotRun:
    pid_s: float
    probe_s: float  # request -> Probed (the probe, and the --help fetch when not cached)
    plan_s: float  # Probed -> Planned
    launch_s: float  # Planned -> Launched
    round_trips: int
    connects: int | None
    plan: LaunchPlan


def config_for(sim_entry: dict, sshd_entry: dict) -> AppConfig:
    return parse_config({
        "hosts": {HOST: {**sim_entry, **sshd_entry, "transport": "ssh"}},
        "policy": {"approvers": ["UAPPROVER"], "min_margin_gib": 0.5, "stop_grace_s": 5},
        "slack": {"excerpt_interval_s": 0.5, "excerpt_max_lines": 8},
    }, "bench config")


async def bot_once(config: AppConfig, store: Store, profiler: cProfile.Profile | None = None) -> BotRun:
    pipeline = Pipeline(config, store, secrets=Secrets())
    try:
        clock = PidClock(pipeline)
        if profiler is not None:
            profiler.enable()
        outcome = await pipeline.handle_text(REQUEST, clock, Requester(user="UBENCH"))
        if profiler is not None:
            profiler.disable()
        if outcome.state != "ready" or "launched" not in clock.at or clock.plan is None:
            raise RuntimeError(f"the request did not launch: {outcome.state} {outcome.message} {sorted(clock.at)}")
        at = clock.at
        run = BotRun(pid_s=at["launched"], probe_s=at["probed"], plan_s=at["planned"] - at["probed"],
                     launch_s=at["launched"] - at["planned"], round_trips=clock.round_trips_at_pid or 0,
                     connects=clock.connects_at_pid, plan=clock.plan)
        stopped = await pipeline.handle_text(STOP, DiscardThread(), Requester(user="UBENCH"))
        if stopped.state != "stopped":
            raise RuntimeError(f"the server did not stop: {stopped.state} {stopped.message}")
        return run
    finally:
        await pipeline.close()


async def floor_once(cfg: HostConfig, plan: LaunchPlan, parts: dict[str, float] | None = None) -> float:
    """One connection, the same probe agent, then the plan's argv started by hand; seconds to the PID.
    `parts`: filled with the seconds each step took (connect, probe, launch)."""
    parts = {} if parts is None else parts
    started = time.perf_counter()
    async with asyncssh.connect(cfg.address, port=cfg.port, username=cfg.user,
                                client_keys=[expand(cfg.identity_file or "")],
                                known_hosts=expand(cfg.known_hosts or ""), agent_path=None, config=[]) as conn:
        parts["connect"] = time.perf_counter() - started
        probe_args = {"models_dir": cfg.models_dir, "model": MODEL, "engine_help": []}
        probed = await conn.run(remote_command([cfg.python, "-", json.dumps(probe_args)]),
                                input=agent_source("probe_agent"), check=True)
        json.loads(str(probed.stdout))
        parts["probe"] = time.perf_counter() - started - parts["connect"]
        log = f"{cfg.log_dir}/floor-{plan.deployment_key}.log"
        argv = ["env", *(f"{k}={v}" for k, v in plan.env.items()), *plan.argv]
        by_hand = f"setsid nohup {remote_command(argv)} > {shlex.quote(log)} 2>&1 < /dev/null & echo $!"
        launched = await conn.run(by_hand, check=True)
        pid = int(str(launched.stdout).strip())
        seconds = time.perf_counter() - started
        parts["launch"] = seconds - parts["connect"] - parts["probe"]
        # Not timed: stop it and wait until it is gone, so the next repeat finds the GPUs and the port free.
        await conn.run(f"kill -TERM {pid}; for i in $(seq 200); do kill -0 {pid} 2>/dev/null || exit 0; "
                       f"sleep 0.05; done; kill -KILL {pid}", timeout=30)
    return seconds


def cli_once(config_path: Path, db: Path) -> float:
    """`deploybot ask` as a process: seconds from exec to the PID line on its output, then it runs to ready."""
    command = [str(Path(sys.executable).with_name("deploybot")), "--config", str(config_path), "--db", str(db),
               "ask", REQUEST]
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO,
                               env={**os.environ, "COLUMNS": "200"})
    pid_s = None
    assert process.stdout is not None
    try:
        for line in process.stdout:
            if pid_s is None and "PID" in line and "launch" in line:
                pid_s = time.perf_counter() - started
        process.wait(timeout=CLI_TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    stop = subprocess.run([*command[:-1], STOP], capture_output=True, text=True, timeout=CLI_TIMEOUT_S, cwd=REPO)
    if pid_s is None or process.returncode != 0 or stop.returncode != 0:
        raise RuntimeError(f"deploybot ask failed: exit {process.returncode}, stop exit {stop.returncode}: "
                           f"{stop.stdout[-500:]}")
    return pid_s


async def measure(args: argparse.Namespace, work: Path) -> None:
    with sim_host(work / "host", gpus="2xA6000", ready_after_s=0.3) as sim, sshd_servers(work / "sshd", 1) as servers:
        sim.set_scenario("healthy", periodic_interval_s=0.5)
        sim_entry, sshd_entry = sim.host_config(), servers[0].host_overrides()
        config = config_for(sim_entry, sshd_entry)
        store = Store(work / "state.db")
        profiler = cProfile.Profile() if args.profile else None
        bots: list[BotRun] = []
        floors: list[float] = []
        try:
            bots.append(await bot_once(config, store))  # the first: also fetches --help
            for repeat in range(args.repeats):
                # alternate who goes first, so that a noisy moment does not fall on one side only
                if repeat % 2 == 0:
                    floors.append(await floor_once(config.hosts[HOST], bots[0].plan))
                    bots.append(await bot_once(config, store, profiler if repeat == 0 else None))
                else:
                    bots.append(await bot_once(config, store))
                    floors.append(await floor_once(config.hosts[HOST], bots[0].plan))
            config_path = work / "app.yaml"
            config_path.write_text(yaml.safe_dump({"hosts": {HOST: {**sim_entry, **sshd_entry, "transport": "ssh"}},
                                                   "policy": {"approvers": ["UAPPROVER"], "min_margin_gib": 0.5,
                                                              "stop_grace_s": 5}}))
            # The same store (SQLite, WAL): --help is cached already, as for a user who asked before.
            cli = [cli_once(config_path, work / "state.db") for _ in range(args.cli_runs)]
        finally:
            store.close()
    report(bots, floors, cli, profiler)


def report(bots: list[BotRun], floors: list[float], cli: list[float], profiler: cProfile.Profile | None) -> None:
    first, steady = bots[0], bots[1:]

    def med(values: list[float]) -> float:
        return statistics.median(values)

    bot_pid, floor_pid = med([b.pid_s for b in steady]), med(floors)
    figure("repeats", len(steady), "(after the first request)")
    figure("bot_first_request_to_pid", first.pid_s, "s (fetches --help once)")
    figure("bot_first_round_trips_to_pid", first.round_trips)
    figure("bot_request_to_pid", bot_pid, "s (median)")
    figure("bot_request_to_pid_min", min(b.pid_s for b in steady), "s")
    figure("bot_request_to_pid_max", max(b.pid_s for b in steady), "s")
    figure("bot_round_trips_to_pid", steady[0].round_trips)
    figure("bot_connections_to_pid", steady[0].connects if steady[0].connects is not None else "n/a")
    figure("bot_probe", med([b.probe_s for b in steady]), "s (request -> Probed)")
    figure("bot_plan", med([b.plan_s for b in steady]), "s (Probed -> Planned)")
    figure("bot_launch", med([b.launch_s for b in steady]), "s (Planned -> Launched)")
    figure("floor_request_to_pid", floor_pid, "s (median; asyncssh: connect, probe agent, setsid nohup)")
    figure("floor_round_trips_to_pid", 2)
    figure("ratio_bot_over_floor", ratio(bot_pid, floor_pid), "x")
    figure("ratio_first_over_floor", ratio(first.pid_s, floor_pid), "x")
    if cli:
        figure("cli_ask_to_pid", med(cli), f"s (deploybot ask as a process: start-up, imports, then the same; "
                                            f"median of {len(cli)})")
    verdict = "within 1.5x of" if bot_pid <= 1.5 * floor_pid else "MORE than 1.5x"
    summary(f"request to PID: bot {bot_pid:.2f} s in {steady[0].round_trips} SSH round trips (first request "
            f"{first.pid_s:.2f} s, {first.round_trips} round trips), plain SSH {floor_pid:.2f} s: "
            f"{bot_pid / floor_pid:.2f}x, {verdict} the floor")
    if profiler is not None:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(25)
        print("# cProfile of one steady-state request (to ready), top 25 by cumulative time:")
        for line in out.getvalue().splitlines():
            print(f"#   {line}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=6)
    parser.add_argument("--cli-runs", type=int, default=2)
    parser.add_argument("--profile", action="store_true", help="cProfile one steady-state request")
    args = parser.parse_args()
    missing = require_sshd()
    if missing:
        print(f"bench_request_to_pid: {missing}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-pid-") as folder:
        note(f"request: {REQUEST!r}; host: simulated 2x RTX A6000 behind a real sshd on 127.0.0.1")
        asyncio.run(measure(args, Path(folder)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
