"""Helpers the benchmarks share: plain `name: value unit` figures, percentiles, process CPU and memory read from
/proc, a sampler of a process tree's memory, and real sshd servers / simulated hosts that are always stopped.

Every bench prints its figures through `figure()`, so `run_all.py` and the README read one format:

    ack_p50: 4.1 ms
"""

from __future__ import annotations

import contextlib
import datetime
import math
import os
import platform
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # the benches run as plain scripts (`python bench/x.py`) from anywhere
    sys.path.insert(0, str(REPO))

from bot.simhost import SimHost, build_sim_host  # noqa: E402
from tests.sshd import Sshd, start_sshd  # noqa: E402

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
MIB = 1024 * 1024


# --------------------------------------------------------------------------------------------- printing


def figure(name: str, value: object, unit: str = "") -> None:
    """One figure, one line: `name: value unit` (floats with 3 significant decimals at most)."""
    if isinstance(value, float):
        text = f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
    else:
        text = str(value)
    print(f"{name}: {text}{' ' + unit if unit else ''}", flush=True)


def summary(text: str) -> None:
    print(f"summary: {text}", flush=True)


def note(text: str) -> None:
    """Context that is not a figure (what ran, where); kept out of the `name: value` format on purpose."""
    print(f"# {text}", flush=True)


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (p99 of 200 samples is the 198th smallest): no interpolation between samples."""
    if not values:
        raise ValueError("no samples")
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def ratio(value: float, floor: float) -> float:
    return value / floor if floor > 0 else float("inf")


# --------------------------------------------------------------------------------------------- processes


def _stat_fields(pid: int | str) -> list[str]:
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().rsplit(")", 1)[1].split()


def cpu_seconds(pid: int | str = "self") -> float:
    """User + system CPU time a process has used so far (not its children)."""
    fields = _stat_fields(pid)
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime (fields 14, 15 of stat)


def thread_cpu_seconds() -> dict[str, float]:
    """CPU time used so far by each of this process's threads, summed by thread name without its trailing number
    (Python's own names: `asyncio_0`, `asyncio_1` -> `asyncio_`), from /proc/self/task: what runs where (the loop that acks, the
    story loop, the executor threads that run SQLite and name lookups)."""
    names = {thread.native_id: thread.name for thread in threading.enumerate()}
    totals: dict[str, float] = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            name = names.get(int(tid)) or Path(f"/proc/self/task/{tid}/comm").read_text().strip()
            name = name.split(" ")[0].rstrip("0123456789")
            fields = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        totals[name] = totals.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    return totals


def reaped_children_cpu_seconds(pid: int | str) -> float:
    """CPU time of the children a process has waited for, and of theirs (cutime + cstime): for an sshd listener,
    everything its finished sessions ran (key exchange, the login shell, the commands)."""
    fields = _stat_fields(pid)
    return (int(fields[13]) + int(fields[14])) / CLOCK_TICKS


def rss_mib(pid: int | str = "self") -> float:
    """Resident memory now, from /proc/PID/statm (what `ps` shows as RSS)."""
    with open(f"/proc/{pid}/statm") as handle:
        return int(handle.read().split()[1]) * PAGE_BYTES / MIB


def peak_rss_mib(pid: int | str = "self") -> float:
    """The highest resident memory the process has had (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _parent_links() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            ppid = int(_stat_fields(entry)[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    return children


def descendants(root: int, links: dict[int, list[int]] | None = None) -> list[int]:
    """Every live process below `root` (children, grandchildren, ...), from /proc parent links."""
    links = _parent_links() if links is None else links
    found, todo = [], [root]
    while todo:
        for child in links.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def tree_cpu_seconds(roots: Sequence[int]) -> float:
    """CPU time used so far by these processes and everything below them, ended or not: each live process's own
    time plus what its ended (waited-for) children used. For sshd listeners: the whole host side of SSH
    (sessions, login shells, the commands they ran). A process ending during the scan may be missed by a few ms."""
    links = _parent_links()
    total = 0.0
    for root in roots:
        for pid in [root, *descendants(root, links)]:
            try:
                total += cpu_seconds(pid) + reaped_children_cpu_seconds(pid)
            except (OSError, ValueError, IndexError):
                continue
    return total


class TreeMemory:
    """Samples the summed RSS of a process and all its descendants in a thread; keeps the peak.

    For comparing tools that work in one process (the bot) with tools that fork (Ansible: a controller, a
    worker per fork and an ssh client per host): both are measured as "the memory of everything it started".
    """

    def __init__(self, pid: int, interval_s: float = 0.05) -> None:
        self.pid = pid
        self.interval_s = interval_s
        self.peak_mib = 0.0
        self.peak_processes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> TreeMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            total, count = 0.0, 0
            for pid in [self.pid, *descendants(self.pid)]:
                try:
                    total += rss_mib(pid)
                    count += 1
                except OSError:
                    continue  # ended between the listing and the read
            if total > self.peak_mib:
                self.peak_mib, self.peak_processes = total, count
            self._stop.wait(self.interval_s)


def children_cpu_seconds() -> float:
    """CPU time of this process's children that ended and were waited for (and theirs)."""
    usage = os.times()
    return usage.children_user + usage.children_system


# --------------------------------------------------------------------------------------------- hosts


@contextlib.contextmanager
def sshd_servers(workdir: Path, count: int) -> Iterator[list[Sshd]]:
    """`count` real OpenSSH servers on loopback, each with its own port and keys; all stopped on the way out."""
    servers: list[Sshd] = []
    try:
        for index in range(count):
            servers.append(start_sshd(workdir / f"sshd-{index:03d}"))
        yield servers
    finally:
        for server in servers:
            server.drop()  # the listener and every session it forked


@contextlib.contextmanager
def sim_host(root: Path, **options: object) -> Iterator[SimHost]:
    """A simulated GPU host; every process started through its interpreter is ended on the way out."""
    host = build_sim_host(root, **options)  # type: ignore[arg-type]
    try:
        yield host
    finally:
        host.terminate_processes()


def listener_pid(server: Sshd) -> int:
    return int((server.workdir / "sshd.pid").read_text())


def host_side_cpu_seconds(servers: Sequence[Sshd]) -> float:
    """CPU time spent so far on the "hosts" behind these sshd servers (see tree_cpu_seconds)."""
    return tree_cpu_seconds([listener_pid(server) for server in servers])


def require_sshd() -> str | None:
    """Why the SSH benches cannot run here, or None."""
    if not Path("/usr/sbin/sshd").exists() or not shutil.which("ssh-keygen"):
        return "OpenSSH server missing: `make sshd` (apt-get install openssh-server) first"
    return None


# --------------------------------------------------------------------------------------------- the machine


def machine_lines() -> list[str]:
    """What the figures came from: cores, memory, CPU model, Python, date (the README quotes these)."""
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor() or "unknown")
    try:
        free = subprocess.run(["free", "-g"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        free = "free -g unavailable"
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return [
        f"date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M UTC}",
        f"nproc: {os.cpu_count()}",
        f"cpu: {cpu}",
        f"python: {platform.python_version()} ({sys.executable})",
        f"kernel: {platform.release()}",
        f"load average at start: {load}",
        "free -g:",
        *("  " + line for line in free.splitlines()),
    ]

