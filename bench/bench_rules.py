"""Benchmark: the time of every pattern that reads host text on its worst adversarial 1 MB line.

The patterns are collected by tests/adversarial.py (every table of the bot.diagnose package, bot.logevents,
bot.redact, so new rules are included); for each, the slowest of its candidate periodic lines is picked on 4 KB and
timed at 1 MB (best of 3 runs, so that a busy machine inflates the figure less). The diagnoser never sees such a
line (bot.tail.bound_text cuts lines at 4,096 characters first): this measures the patterns themselves, the bound
that holds even without the cut. Also timed: one whole diagnosis of a crash tail that ends in a 10 MB line.

    .venv/bin/python bench/bench_rules.py [--size 1048576] [--top 10]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO, figure, note  # noqa: E402

from bot.diagnose import diagnose  # noqa: E402
from tests.adversarial import host_text_patterns, periodic, worst_units  # noqa: E402

CRASHLOG = REPO / "tests" / "data" / "crashlogs" / "dev" / "sglang-003.json"


def best_of(runs: int, work) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1 << 20)
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args()
    patterns = host_text_patterns()
    note(f"{len(patterns)} patterns, worst of their candidate lines at {args.size} characters")
    timed: list[tuple[float, str, str]] = []
    for name, pattern in patterns.items():
        for unit in worst_units(pattern, keep=2):
            line = periodic(unit, args.size)
            timed.append((best_of(3, lambda: pattern.search(line)), name, unit))
    timed.sort(reverse=True)
    for seconds, name, unit in timed[:args.top]:
        note(f"{seconds * 1000:9.1f} ms  {name}  unit={unit!r}")
    worst_s, worst_name, worst_unit = timed[0]
    figure("worst_rule_1mb_ms", worst_s * 1000, "ms")
    print(f"worst_rule: {worst_name} unit={worst_unit!r}")
    per_pattern: dict[str, float] = {}
    for seconds, name, _ in timed:
        per_pattern[name] = max(per_pattern.get(name, 0.0), seconds)
    figure("sum_all_patterns_1mb_s", sum(per_pattern.values()), "s")
    log = json.loads(CRASHLOG.read_text())["log"] + "\n" + periodic("--a ", 10 << 20)
    figure("diagnose_10mb_last_line_ms", best_of(3, lambda: diagnose(log)) * 1000, "ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
