"""Bounded work on host text: no pattern backtracks super-linearly, lines are capped before any rule runs, and the
diagnosis answers by a deadline, off the event loop.

The adversarial lines are built per pattern from its own fragments (tests/adversarial.py): every pattern of the
diagnoser's tables (any ``bot.diagnose*`` module), of ``bot.lognorm``, ``bot.logevents`` and of ``bot.redact`` is
checked, including rules added later. The assertions are on results; a pattern that backtracks quadratically never
returns from a 1 MB line (the incompatible-flags rule took 20 s on 4 KB of dashes before it was fixed). How long each
rule takes is measured in bench/bench_rules.py.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from pathlib import Path

import pytest

from bot.diagnose import diagnose
from bot.diagnose.runner import DiagnosisRunner, cut_short
from bot.logevents import normalize_line
from bot.redact import redact
from bot.tail import MAX_LINE_CHARS, TAIL_BYTES, bound_text
from tests.adversarial import host_text_patterns, periodic, worst_units

MEGABYTE = 1 << 20
PROBE = 4096
CRASHLOG = Path(__file__).parent / "data" / "crashlogs" / "dev" / "sglang-003.json"  # unsupported architecture

PATTERNS = host_text_patterns()


def test_the_tables_are_all_collected() -> None:
    names = set(PATTERNS)
    assert "bot.diagnose.argument_rules.ARGUMENT_RULES[incompatible_flags].pattern" in names
    assert "bot.diagnose.rules.RULES[architecture_not_supported].pattern" in names
    assert "bot.diagnose.rules.FRAMING" in names
    assert "bot.lognorm._RAY_REPEAT" in names and "bot.lognorm._GLOG" in names
    assert "bot.redact._URL_PASSWORD" in names
    assert len(names) > 100


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_pattern_reads_a_megabyte_line_as_it_reads_a_short_one(name: str) -> None:
    """On a periodic line the verdict of a 1 MB line is the verdict of its first 4 KB (and it comes back)."""
    pattern = PATTERNS[name]
    unit = worst_units(pattern, keep=1, probe_size=PROBE)[0]
    short, big = periodic(unit, PROBE), periodic(unit, MEGABYTE)
    small_match, big_match = pattern.search(short), pattern.search(big)
    assert (small_match is None) == (big_match is None) or _anchored_at_end(pattern), (unit, small_match, big_match)
    if small_match is not None and big_match is not None and small_match.end() < PROBE - 512:
        assert big_match.start() == small_match.start()


def _anchored_at_end(pattern: re.Pattern[str]) -> bool:
    return "$" in pattern.pattern or "\\Z" in pattern.pattern


def test_the_fixed_rules_still_name_their_causes() -> None:
    """The rewritten patterns still match the engine messages they were written for."""
    cases = {
        "incompatible_flags": "ValueError: --enable-dp-attention cannot be used with --disable-radix-cache here",
        "shared_library": "ImportError: libcudart.so.12: cannot open shared object file: No such file or directory",
        "please_install": "flashinfer is not installed",
        "quant_dtype": "torch.float32 is not supported for quantization method fp8",
        "ninja_failed": "subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.",
        "speculative_invalid": "ValueError: only EAGLE, NEXTN speculative algorithms are supported",
        "file_missing": "OSError: It looks like the config file at '/m/config.json' is not a valid JSON file.",
    }
    # (any of the diagnoser's rule tables: rules.RULES is assembled from several modules' sections)
    by_name = {name.split("[")[1].split("]")[0]: p for name, p in PATTERNS.items()
               if name.startswith("bot.diagnose.") and "RULES[" in name and name.endswith("].pattern")}
    for rule, line in cases.items():
        assert by_name[rule].search(line), rule
    assert by_name["shared_library"].search(cases["shared_library"]).group(1) == "libcudart.so.12"
    assert by_name["please_install"].search(cases["please_install"]).group(2) == "flashinfer"
    assert by_name["quant_dtype"].search(cases["quant_dtype"]).group(1) == "torch.float32"


def test_logevents_and_redact_fixes_keep_their_meaning() -> None:
    assert normalize_line("(pid=1) boom   [repeated 3x across cluster]").text == "boom"
    assert redact("redis://user:hunter2pass@db:6379/0") == "redis://user:[REDACTED]@db:6379/0"


def test_bound_text_caps_lines_and_the_whole() -> None:
    text = "a" * 10 * MEGABYTE + "\nshort\n" + "b" * 5000
    bounded = bound_text(text)
    assert max(len(line) for line in bounded.split("\n")) == MAX_LINE_CHARS
    assert len(bounded) <= TAIL_BYTES
    assert bounded.split("\n") == ["a" * MAX_LINE_CHARS, "short", "b" * MAX_LINE_CHARS]
    many = "\n".join(f"line {i}" for i in range(100_000))
    assert len(bound_text(many)) <= TAIL_BYTES and bound_text(many).endswith("line 99999")
    assert bound_text("x\ny\n") == "x\ny\n"


def _crash_log() -> str:
    return json.loads(CRASHLOG.read_text())["log"]


@pytest.mark.parametrize("unit", ["-", "--a ", "CalledProcessError: Command '[", "lib1", ".1", "\t "])
def test_a_crash_tail_ending_in_a_10_mb_line_is_diagnosed(unit: str) -> None:
    log = _crash_log()
    expected = diagnose(log)
    assert expected.category == "unsupported_architecture"
    got = diagnose(log + "\n" + periodic(unit, 10 * MEGABYTE))
    assert got.category == expected.category
    assert got.cause == expected.cause
    assert all(len(e.text) <= MAX_LINE_CHARS for e in got.evidence)


def test_a_megabyte_line_before_the_error_changes_nothing() -> None:
    log = _crash_log()
    lines = log.splitlines()
    hostile = "\n".join(lines[:1] + [periodic("--a ", MEGABYTE)] + lines[1:])
    assert diagnose(hostile).category == diagnose(log).category


# --------------------------------------------------------------------------------------------- the runner


async def test_runner_gives_the_same_answer_as_diagnose_in_thread_and_process() -> None:
    log = _crash_log()
    expected = diagnose(log, exit_code=1)
    thread_runner, process_runner = DiagnosisRunner(), DiagnosisRunner(isolate=True, deadline_s=120)
    try:
        assert await thread_runner.diagnose(log, exit_code=1) == expected
        assert await process_runner.diagnose(log, exit_code=1) == expected
    finally:
        await process_runner.close()


async def test_past_the_deadline_the_answer_is_what_is_known() -> None:
    """A diagnosis that does not return is answered at the deadline with the quoted error lines, redacted."""
    release = threading.Event()

    def stuck(log_tail: str, **_: object) -> None:
        release.wait(30)

    runner = DiagnosisRunner(deadline_s=0.2, target=stuck)  # type: ignore[arg-type]
    log = "INFO start\nValueError: token hf_abcdefghijklmnopqrstuvwxyz123456 refused\n" + "x" * MEGABYTE
    try:
        got = await runner.diagnose(log, secrets=["hf_abcdefghijklmnopqrstuvwxyz123456"])
    finally:
        release.set()
    assert got.category == "other"
    assert "did not finish" in got.cause
    assert [e.line for e in got.evidence] == [2]
    assert "hf_abcdefghijklmnopqrstuvwxyz123456" not in got.evidence[0].text
    assert runner.cut_short_count == 1


async def test_a_stuck_worker_process_is_killed_and_replaced() -> None:
    runner = DiagnosisRunner(isolate=True, deadline_s=0.5, target=_sleep_forever)
    try:
        got = await runner.diagnose("RuntimeError: boom\n")
        assert got.category == "other" and got.evidence[0].text == "RuntimeError: boom"
        assert runner._pool is None  # killed; the next diagnosis starts a fresh worker
        runner._target = None
        runner.deadline_s = 120
        assert (await runner.diagnose(_crash_log())).category == "unsupported_architecture"
    finally:
        await runner.close()


def _sleep_forever(log_tail: str, **_: object) -> None:
    import time

    time.sleep(3600)


async def test_the_event_loop_runs_while_a_thread_diagnoses() -> None:
    """The loop keeps ticking while a 10 MB-line crash is diagnosed (it never waits on the diagnosis)."""
    runner = DiagnosisRunner()
    ticks = 0
    task = asyncio.ensure_future(runner.diagnose(_crash_log() + "\n" + periodic("--a ", 10 * MEGABYTE)))
    while not task.done():
        ticks += 1
        await asyncio.sleep(0)
    assert ticks > 1
    assert task.result().category == "unsupported_architecture"


def test_cut_short_of_an_empty_tail() -> None:
    got = cut_short("", 5)
    assert got.evidence == [] and got.category == "other"


def test_a_diagnosis_that_finishes_after_its_loop_closed_is_dropped_quietly() -> None:
    # (the worker thread outlives a bot that shut down; raising there would only print a thread traceback)
    import asyncio

    from bot.diagnose.runner import _post

    loop = asyncio.new_event_loop()
    future = loop.create_future()
    loop.close()
    _post(loop, future, None, RuntimeError("late"))
    assert not future.done()
