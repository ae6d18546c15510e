"""Benchmark: diagnosing the end of a 1 GiB server log reads only its tail.

Builds a 1 GiB log in a temporary folder (a sparse hole for the old part, then real decode lines from the corpus,
then a real crash at the end), diagnoses it with ``diagnose_file`` the way ``deploybot diagnose`` does, and prints
plain ``name: value unit`` lines: time, bytes actually read (Linux /proc/self/io), peak Python memory (tracemalloc)
and peak RSS. The file is deleted afterwards.

    .venv/bin/python bench/bench_diagnose.py [--size-mib 1024] [--dense] [--repeat 20]

``--dense`` writes real lines for the whole size instead of a sparse hole (slower to build; same reading cost).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.diagnose import diagnose, diagnose_file  # noqa: E402
from bot.tail import TAIL_BYTES, read_tail  # noqa: E402

MIB = 1024 * 1024
#: The first crash corpus, copied from shared/corpus/crashlogs (tests/data/PROVENANCE.md).
CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "crashlogs" / "dev"

# Used only when the corpus is absent: lines quoted in tests/data/engines/sglang-log-lines.md.
FALLBACK_HEALTHY = (
    "[2025-11-11 04:06:30] Decode batch, #running-req: 28, #token: 22920, token usage: 0.13, cuda graph: True, "
    "gen throughput (token/s): 1086.59, #queue-req: 0, \n"
)
FALLBACK_CRASH = (
    "[2025-06-19 15:12:27 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n"
)


def _corpus_text(name: str, fallback: str) -> str:
    path = CORPUS / f"{name}.json"
    if path.is_file():
        return json.loads(path.read_text())["log"].rstrip("\n") + "\n"
    return fallback


def build_log(path: Path, size: int, *, dense: bool) -> float:
    """Write a ``size``-byte log ending in a real crash; returns the seconds it took."""
    started = time.perf_counter()
    healthy = _corpus_text("sglang-021", FALLBACK_HEALTHY).encode()
    crash = _corpus_text("sglang-015", FALLBACK_CRASH).encode()
    block = healthy * max(1, MIB // len(healthy))  # about 1 MiB of real lines, written as often as needed
    real_part = size - len(crash) if dense else min(size - len(crash), 16 * MIB)
    with open(path, "wb") as handle:
        hole = size - len(crash) - real_part
        if hole > 0:
            handle.truncate(hole)  # sparse: costs no disk and no write time
            handle.seek(hole)
        written = 0
        while written < real_part:
            chunk = block[: real_part - written]
            handle.write(chunk)
            written += len(chunk)
        handle.write(crash)
    return time.perf_counter() - started


def bytes_read_by_process() -> int | None:
    """Bytes this process has read through read(2) and friends (Linux), or None where unknown."""
    try:
        for line in Path("/proc/self/io").read_text().splitlines():
            if line.startswith("rchar:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def timed(call, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def corpus_time(repeat: int) -> tuple[int, float] | None:
    logs = [json.loads(p.read_text())["log"] for p in sorted(CORPUS.glob("*.json"))] if CORPUS.is_dir() else []
    if not logs:
        return None
    per_pass = timed(lambda: [diagnose(log) for log in logs], max(1, repeat // 4))
    return len(logs), per_pass / len(logs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--dense", action="store_true", help="write real lines for the whole file (slower build)")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    size = args.size_mib * MIB

    with tempfile.TemporaryDirectory(prefix="bench-diagnose-") as folder:
        path = Path(folder) / "server.log"
        build_seconds = build_log(path, size, dense=args.dense)
        stat = path.stat()
        print(f"file_size: {stat.st_size} bytes")
        print(f"file_on_disk: {stat.st_blocks * 512 / MIB:.1f} MiB")
        print(f"build_time: {1000 * build_seconds:.1f} ms")
        print(f"tail_bound: {TAIL_BYTES} bytes")

        before = bytes_read_by_process()
        result = diagnose_file(path)
        after = bytes_read_by_process()
        read = (after - before) if before is not None and after is not None else None
        print(f"category: {result.category}")
        print(f"bytes_read: {read if read is not None else 'n/a'} bytes")
        if read is not None:
            print(f"fraction_read: {100 * read / stat.st_size:.4f} %")

        tail = read_tail(path)
        print(f"read_tail_time: {1000 * timed(lambda: read_tail(path), args.repeat):.2f} ms")
        print(f"diagnose_tail_time: {1000 * timed(lambda: diagnose(tail), args.repeat):.2f} ms")
        print(f"diagnose_file_time: {1000 * timed(lambda: diagnose_file(path), args.repeat):.2f} ms")

        tracemalloc.start()
        diagnose_file(path)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(f"peak_python_memory: {peak / MIB:.2f} MiB")
        print(f"max_rss: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f} MiB")

    corpus = corpus_time(args.repeat)
    if corpus:
        print(f"corpus_logs: {corpus[0]} logs")
        print(f"corpus_diagnose_time: {1000 * corpus[1]:.2f} ms/log")

    print(f"summary: a {args.size_mib} MiB log was diagnosed from its last {TAIL_BYTES // 1024} KiB only "
          f"({'bytes read: ' + str(read) if read is not None else 'bytes read unknown on this OS'}); "
          f"time and memory do not grow with the file, only with the tail bound")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
