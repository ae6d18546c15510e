"""Benchmark: follow 50 deployments at once, each logging 20 lines a second, through ONE SSH connection.

A real OpenSSH sshd on loopback fronts a simulated GPU host. Fifty "engines" are started there with the bot's own
`bot.launch.launch` (hand-built LaunchPlans; the engine is this script in --write-log mode, writing realistic SGLang
serving lines: prefill and decode batches, access lines) and each is followed by the bot's real `Follower` over one
pooled `SshRemote`, into the real SQLite store and a counting thread, until the engine exits.

At the same time, in its own process, the floor: plain asyncssh, one connection, `tail -F` of the same 50 logs,
counting lines. Printed: the bot's CPU % (process CPU time / wall) and RSS against the floor's, the host side's CPU
(sshd and the follow agents), excerpts delivered, and lines written against lines received: none may be lost.

    .venv/bin/python bench/bench_follow.py [--deployments 50] [--rate 20] [--seconds 30]
"""

from __future__ import annotations

import sys
import time


def write_engine_log(rate: float, seconds: float) -> int:
    """The simulated engine: `rate` lines a second for `seconds`, on stdout (the launch agent points it at the log).

    Runs on the host as the engine; standard library only, and dispatched before the bot's imports below, so that
    fifty of them start as quickly as a real engine's log would begin.
    """
    started = time.time()
    total = int(rate * seconds)
    for index in range(total):
        due = started + index / rate
        pause = due - time.time()
        if pause > 0:
            time.sleep(pause)
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        running = 8 + index % 40
        kind = index % 10
        if kind == 0:
            line = (f"[{stamp}] Prefill batch, #new-seq: {1 + index % 3}, #new-token: {96 + index % 900}, "
                    f"#cached-token: {index % 64}, token usage: 0.{10 + index % 80:02d}, #running-req: {running}, "
                    f"#queue-req: 0, cuda graph: True, input throughput (token/s): "
                    f"{400 + index % 700}.{index % 100:02d}")
        elif kind in (1, 2):
            line = (f'[{stamp}] INFO:     127.0.0.1:{40000 + index % 20000} - "POST /v1/chat/completions HTTP/1.1" '
                    f"200 OK")
        else:
            line = (f"[{stamp}] Decode batch, #running-req: {running}, #token: {running * 830 + index % 997}, "
                    f"token usage: 0.{10 + index % 80:02d}, accept len: {2 + (index % 90) / 100:.2f}, "
                    f"accept rate: 0.{60 + index % 30}, cuda graph: True, gen throughput (token/s): "
                    f"{700 + index % 500}.{index % 100:02d}, #queue-req: 0, ")
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__" and sys.argv[1:2] == ["--write-log"]:
    raise SystemExit(write_engine_log(float(sys.argv[2]), float(sys.argv[3])))

import argparse  # noqa: E402
import asyncio  # noqa: E402
import cProfile  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import pstats  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    figure,
    listener_pid,
    note,
    ratio,
    require_sshd,
    rss_mib,
    sim_host,
    sshd_servers,
    summary,
    tree_cpu_seconds,
)

from bot.backends.process import ProcessBackend  # noqa: E402
from bot.config import HostConfig, expand  # noqa: E402
from bot.events import Event, LogExcerpt  # noqa: E402
from bot.follow import ExcerptBatcher, Follower  # noqa: E402
from bot.logevents import LogReader  # noqa: E402
from bot.models import Deployment, LaunchPlan  # noqa: E402
from bot.redact import redact  # noqa: E402
from bot.remote import SshRemote  # noqa: E402
from bot.store import Store  # noqa: E402

HOST = "sim"
FIRST_PORT = 39100  # nothing listens there: the follow agents' health checks are refused, as before a server is up
FLOOR_TIMEOUT_S = 30


@dataclass
class CountingThread:
    """The thread a follower tells: counts excerpts and their lines (and the lines cut from them by design)."""

    excerpts: int = 0
    lines: int = 0
    omitted: int = 0
    other: list[str] = field(default_factory=list)

    async def emit(self, event: Event) -> None:
        if isinstance(event, LogExcerpt):
            self.excerpts += 1
            self.lines += len(event.lines)
            self.omitted += event.omitted
        else:
            self.other.append(event.kind)


def writer_plan(python: str, index: int, rate: float, seconds: float) -> LaunchPlan:
    port = FIRST_PORT + index
    return LaunchPlan(host=HOST, model=f"writer-{index:02d}", model_path="/dev/null", engine="sglang", tp=1, gpus=[],
                      port=port, argv=[python, str(Path(__file__).resolve()), "--write-log", str(rate), str(seconds)],
                      weights_bytes=0, kv_bytes_per_token=0)


async def rss_sampler(peak: list[float], stop: asyncio.Event) -> None:
    while not stop.is_set():
        peak[0] = max(peak[0], rss_mib())
        try:
            await asyncio.wait_for(stop.wait(), 0.25)
        except TimeoutError:
            pass


async def follow_all(cfg: HostConfig, floor_cfg: HostConfig, python: str, args: argparse.Namespace, work: Path,
                     listener: int) -> dict:
    """Launch the writers, follow them all until they end; the floor tails the same logs meanwhile through its
    own sshd (so that the host-side CPU counted under `listener` is the bot's alone)."""
    store = Store(work / "state.db")
    remote = SshRemote(HOST, cfg)
    backend = ProcessBackend(HOST, cfg, remote)
    try:
        plans = [writer_plan(python, i, args.rate, args.seconds) for i in range(args.deployments)]
        started = time.perf_counter()
        records = await asyncio.gather(*(backend.launch(plan, f"bench{i:03d}") for i, plan in enumerate(plans)))
        launch_s = time.perf_counter() - started
        deployments = []
        for i, (plan, record) in enumerate(zip(plans, records, strict=True)):
            dep = Deployment(id=f"bench{i:03d}", host=HOST, model=plan.model, engine="sglang", port=plan.port,
                             plan=plan, state="starting", handle=record.handle, log_offset=record.log_offset)
            await store.save_deployment(dep)
            deployments.append(dep)
        floor = start_floor(floor_cfg, [d.handle.log_path if d.handle else "" for d in deployments], work)
        try:
            result = await follow_with_floor(backend, store, deployments, floor, launch_s, args, listener)
            return {**result, "connects": remote.connects, "round_trips": remote.round_trips}
        finally:
            if floor.poll() is None:  # an error or an interrupt on the way: the floor goes too
                floor.kill()
                floor.wait()
    finally:
        await remote.close()
        store.close()


async def follow_with_floor(backend: ProcessBackend, store: Store, deployments: list[Deployment],
                            floor: subprocess.Popen[str], launch_s: float, args: argparse.Namespace,
                            listener: int) -> dict:
    """Follow every deployment until its engine ends, measuring the bot's CPU and memory meanwhile."""
    threads = [CountingThread() for _ in deployments]
    followers = [Follower(backend, store, thread, dep, redact=redact)
                 for thread, dep in zip(threads, deployments, strict=True)]
    rss_before = rss_mib()
    peak = [rss_before]
    stop_sampling = asyncio.Event()
    sampler = asyncio.create_task(rss_sampler(peak, stop_sampling))
    host_before = tree_cpu_seconds([listener])
    profiler = cProfile.Profile() if args.profile else None
    cpu_before, wall_before = time.process_time(), time.perf_counter()
    if profiler is not None:
        profiler.enable()
    outcomes = await asyncio.gather(*(f.run(until_ready=False) for f in followers))
    if profiler is not None:
        profiler.disable()
    cpu, wall = time.process_time() - cpu_before, time.perf_counter() - wall_before
    host_cpu = tree_cpu_seconds([listener]) - host_before
    stop_sampling.set()
    await sampler
    floor_result = stop_floor(floor)
    written = [count_lines(Path(d.handle.log_path if d.handle else "")) for d in deployments]
    sizes = [Path(d.handle.log_path if d.handle else "").stat().st_size for d in deployments]
    stored = [await store.get_deployment(d.id) for d in deployments]
    return {
        "launch_s": launch_s, "wall_s": wall, "cpu_s": cpu, "host_cpu_s": host_cpu,
        "rss_before": rss_before, "rss_peak": peak[0], "rss_after": rss_mib(),
        "written": written, "received": [f.lines_seen for f in followers],
        "offsets_ok": sum(1 for d, size in zip(deployments, sizes, strict=True) if d.log_offset == size),
        "stored_offsets_ok": sum(1 for row, size in zip(stored, sizes, strict=True)
                                 if row is not None and row.log_offset == size),
        "ended": sum(1 for o in outcomes if o.state == "crashed" and o.exit_code == 0),
        "excerpts": sum(t.excerpts for t in threads), "excerpt_lines": sum(t.lines for t in threads),
        "omitted": sum(t.omitted for t in threads), "other_events": sorted({k for t in threads for k in t.other}),
        "floor": floor_result,
        "profile": profile_text(profiler) if profiler is not None else None,
        "per_line_us": per_line_costs(Path(deployments[0].handle.log_path if deployments[0].handle else "")),
    }


def profile_text(profiler: cProfile.Profile) -> str:
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(20)
    stats.sort_stats("cumulative").print_stats(r"bot/|asyncssh/(connection|channel|stream)", 20)
    return out.getvalue()


def per_line_costs(log: Path, engine: str = "sglang", sample: int = 2000) -> dict[str, float]:
    """Microseconds per line of each thing the follower does with a line, on real lines of a followed log:
    where the bot's CPU goes, measured on its own (the profile says the same with more noise)."""
    lines = log.read_text().splitlines()[:sample]
    messages = [json.dumps({"t": "log", "o": i, "l": line}) for i, line in enumerate(lines)]
    reader = LogReader(engine=engine)
    batcher = ExcerptBatcher(interval_s=5.0, max_lines=12)

    def timed(step: Callable[[], object]) -> float:
        started = time.perf_counter()
        step()
        return 1e6 * (time.perf_counter() - started) / len(lines)

    return {
        "json_decode": timed(lambda: [json.loads(m) for m in messages]),
        "redact": timed(lambda: [redact(line) for line in lines]),
        "log_events": timed(lambda: [reader.feed(line) for line in lines]),
        "batch": timed(lambda: [batcher.add(line) for line in lines]),
    }


def count_lines(path: Path) -> int:
    with open(path, "rb") as handle:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))


# --------------------------------------------------------------------------------------------- the floor


async def floor_tail(cfg: dict, logs: list[str]) -> dict:
    """Runs in its own process: one asyncssh connection, `tail -F` of every log, lines counted until SIGTERM."""
    import asyncssh

    counts = [0] * len(logs)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with asyncssh.connect(cfg["address"], port=cfg["port"], username=cfg["user"],
                                client_keys=[expand(cfg["identity_file"])], known_hosts=expand(cfg["known_hosts"]),
                                agent_path=None, config=[]) as conn:

        async def one(index: int, path: str) -> None:
            async with conn.create_process(f"tail -n +1 -F -s 0.2 {path}") as process:
                async for _line in process.stdout:
                    counts[index] += 1

        cpu, wall = time.process_time(), time.perf_counter()
        tasks = [asyncio.create_task(one(i, p)) for i, p in enumerate(logs)]
        print("streaming", flush=True)
        # Until told to stop, or until every tail has ended (the connection went away: the bench is over).
        waiters: list[asyncio.Future[Any]] = [asyncio.create_task(stop.wait()),
                                              asyncio.gather(*tasks, return_exceptions=True)]
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        waiters[0].cancel()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return {"cpu_s": cpu, "wall_s": wall, "received": counts}


def start_floor(cfg: HostConfig, logs: list[str], work: Path) -> subprocess.Popen[str]:
    spec = work / "floor.json"
    spec.write_text(json.dumps({"cfg": cfg.model_dump(), "logs": logs}))
    process = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--floor-child", str(spec)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    first = process.stdout.readline()  # "streaming" once its tails are open
    if first.strip() != "streaming":
        process.kill()
        raise RuntimeError(f"the floor did not start: {first!r} {process.stderr.read() if process.stderr else ''}")
    return process


def stop_floor(process: subprocess.Popen[str]) -> dict:
    """Stop the floor once the writers are done and read its figures."""
    time.sleep(1.5)  # `tail -F` polls every 0.2 s: time to read the last lines
    process.send_signal(signal.SIGTERM)
    try:
        out, err = process.communicate(timeout=FLOOR_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        raise RuntimeError(f"the floor did not stop: {err[-1000:]}") from None
    if process.returncode != 0:
        raise RuntimeError(f"the floor failed ({process.returncode}): {err[-1000:]}")
    return json.loads(out.strip().splitlines()[-1])


# --------------------------------------------------------------------------------------------- main


def report(args: argparse.Namespace, result: dict) -> bool:
    floor = result["floor"]
    written, received, floor_received = sum(result["written"]), sum(result["received"]), sum(floor["received"])
    lost = sum(max(0, w - r) for w, r in zip(result["written"], result["received"], strict=True))
    extra = sum(max(0, r - w) for w, r in zip(result["written"], result["received"], strict=True))
    n = args.deployments
    bot_pct = 100 * result["cpu_s"] / result["wall_s"]
    floor_pct = 100 * floor["cpu_s"] / floor["wall_s"]
    figure("deployments", n)
    figure("lines_per_second_each", args.rate)
    figure("follow_wall", result["wall_s"], "s")
    figure("launch_all", result["launch_s"], f"s ({n} launches over the same connection)")
    figure("ssh_connections", result["connects"])
    figure("ssh_round_trips", result["round_trips"], f"({n} launches + {n} streams)")
    figure("lines_written", written)
    figure("lines_received", received)
    figure("lines_lost", lost)
    figure("lines_repeated", extra)
    figure("deployments_seen_to_exit_0", f"{result['ended']}/{n}")
    figure("offsets_at_end_of_log", f"{result['offsets_ok']}/{n}")
    figure("offsets_saved_in_store", f"{result['stored_offsets_ok']}/{n}")
    figure("excerpts_delivered", result["excerpts"])
    figure("excerpt_lines", result["excerpt_lines"], f"(+{result['omitted']} cut to keep excerpts short, by design)")
    figure("bot_cpu", bot_pct, "% of one core (process CPU / wall)")
    figure("bot_cpu_per_1000_lines", 1000 * result["cpu_s"] / max(received, 1), "s")
    figure("bot_rss_before", result["rss_before"], "MiB")
    figure("bot_rss_peak", result["rss_peak"], "MiB")
    figure("bot_rss_after", result["rss_after"], "MiB")
    figure("floor_lines_received", floor_received, "(plain asyncssh, tail -F, same logs)")
    figure("floor_cpu", floor_pct, "% of one core")
    figure("ratio_cpu_bot_over_floor", ratio(bot_pct, floor_pct), "x")
    figure("host_cpu", 100 * result["host_cpu_s"] / result["wall_s"], f"% of one core (sshd + {n} follow agents)")
    figure("host_cpu_per_deployment", 100 * result["host_cpu_s"] / result["wall_s"] / n, "% of one core")
    for step, micros in result["per_line_us"].items():
        figure(f"bot_per_line_{step}", micros, "us (measured alone on lines of a followed log)")
    if result["other_events"]:
        figure("other_events", ", ".join(result["other_events"]))
    ok = lost == 0 and extra == 0 and result["offsets_ok"] == n
    summary(f"{n} deployments x {args.rate:g} lines/s for {args.seconds:g} s over 1 SSH connection: "
            f"{received}/{written} lines received ({'none lost' if ok else f'{lost} LOST, {extra} repeated'}), "
            f"{result['excerpts']} excerpts; bot {bot_pct:.1f}% CPU, {result['rss_peak']:.0f} MiB RSS; "
            f"plain tail -F {floor_pct:.1f}% CPU ({ratio(bot_pct, floor_pct):.1f}x)")
    if result["profile"]:
        print("# cProfile of the bot while following (top by own time, then the bot's and asyncssh's by cumulative):")
        for line in result["profile"].splitlines():
            print(f"#   {line}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deployments", type=int, default=50)
    parser.add_argument("--rate", type=float, default=20.0, help="log lines a second, each")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--profile", action="store_true", help="cProfile the bot while it follows (costs CPU itself)")
    parser.add_argument("--floor-child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor_child:
        spec = json.loads(args.floor_child.read_text())
        print(json.dumps(asyncio.run(floor_tail(spec["cfg"], spec["logs"]))))
        return 0
    missing = require_sshd()
    if missing:
        print(f"bench_follow: {missing}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-follow-") as folder:
        work = Path(folder)
        with sim_host(work / "host", gpus="2xA6000") as sim, sshd_servers(work / "sshd", 2) as servers:
            cfg, floor_cfg = (HostConfig.model_validate({**sim.host_config(), **s.host_overrides()}) for s in servers)
            note(f"{args.deployments} writers on a simulated host behind a real sshd (127.0.0.1:{servers[0].port}); "
                 f"the floor through a second sshd (127.0.0.1:{servers[1].port})")
            result = asyncio.run(follow_all(cfg, floor_cfg, str(sim.python), args, work, listener_pid(servers[0])))
    return 0 if report(args, result) else 1


if __name__ == "__main__":
    raise SystemExit(main())
