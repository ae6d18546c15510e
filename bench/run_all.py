"""Run every benchmark, one after the other, each in its own process; print the machine, then each bench's
figures as it prints them, then a table of how long each took. `make bench` runs this.

    .venv/bin/python bench/run_all.py [--only ack fleet ...] [--save bench/results/latest.txt]

A bench that overruns its limit is interrupted (SIGINT, so that its `finally` blocks stop the sshd servers,
engines and writers it started), then killed with its whole process group if it does not end.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import machine_lines  # noqa: E402

#: The issue's bound for one bench on the 2-core machine; a bench is still given some slack before it is stopped.
TARGET_S = 180.0
LIMIT_S = 300.0
GRACE_S = 20.0


@dataclass(frozen=True)
class Bench:
    name: str
    script: str
    what: str


BENCHES = (
    Bench("diagnose", "bench_diagnose.py", "the tail of a 1 GiB log: time and peak memory"),
    Bench("request_to_pid", "bench_request_to_pid.py", "request -> PID over sshd, against plain asyncssh"),
    Bench("slack_pid", "bench_slack_pid.py", "signed /deploy -> PID at Slack's Web API, against plain asyncssh"),
    Bench("follow", "bench_follow.py", "50 deployments x 20 lines/s through one SSH connection, against tail -F"),
    Bench("fleet", "bench_fleet_probe.py", "probe 50 sshd hosts at once, against Ansible"),
    Bench("discovery", "bench_discovery.py", "serve learning a 50-host fleet's models at start, against asyncssh"),
    Bench("ack", "bench_ack.py", "200 signed /deploy, 20 at a time, against a bare Bolt app"),
)


@dataclass
class Outcome:
    bench: Bench
    seconds: float
    code: int
    output: list[str]


def run(bench: Bench) -> Outcome:
    print(f"\n=== {bench.name}: {bench.what}", flush=True)
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, str(HERE / bench.script)], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True, cwd=HERE.parent)
    overran = threading.Event()

    def overrun() -> None:
        overran.set()
        print(f"!!! {bench.name} ran past {LIMIT_S:.0f} s: interrupting it", flush=True)
        stop(process)

    watchdog = threading.Timer(LIMIT_S, overrun)
    watchdog.start()
    lines: list[str] = []
    assert process.stdout is not None
    try:
        for line in process.stdout:  # ends when the bench ends (or is stopped by the watchdog)
            print(line, end="", flush=True)
            lines.append(line.rstrip("\n"))
        code = process.wait()
    except KeyboardInterrupt:
        stop(process)
        raise
    finally:
        watchdog.cancel()
    return Outcome(bench, time.perf_counter() - started, 124 if overran.is_set() else code, lines)


def stop(process: subprocess.Popen[str]) -> None:
    """SIGINT first (the bench's finally blocks stop what it started), then SIGKILL to its whole group."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)  # anything it left behind in its group (sshd, child processes)
    except ProcessLookupError:
        pass
    process.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=[b.name for b in BENCHES], help="run these benches only")
    parser.add_argument("--save", type=Path, help="also write everything printed to this file")
    args = parser.parse_args()
    chosen = [b for b in BENCHES if not args.only or b.name in args.only]

    header = ["=== machine", *machine_lines()]
    print("\n".join(header), flush=True)
    outcomes = [run(bench) for bench in chosen]

    table = ["", "=== benches (wall time, exit code)"]
    for outcome in outcomes:
        flag = "" if outcome.seconds <= TARGET_S else f"  (over the {TARGET_S:.0f} s target)"
        table.append(f"{outcome.bench.name}: {outcome.seconds:.1f} s, exit {outcome.code}{flag}")
    print("\n".join(table), flush=True)
    if args.save:
        args.save.parent.mkdir(parents=True, exist_ok=True)
        body = [*header]
        for outcome in outcomes:
            body += ["", f"=== {outcome.bench.name}: {outcome.bench.what}", *outcome.output]
        args.save.write_text("\n".join(body + table) + "\n")
    return 0 if all(o.code == 0 for o in outcomes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
