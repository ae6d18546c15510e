"""Flag validation against an engine's own --help, and the closest valid name for an unknown flag."""

from __future__ import annotations

import argparse

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planners.argv import remove as remove_flags
from planners.flags import parse_help, suggest_flag, validate_argv
from planners.plan import suggest_flag as plan_suggest_flag
from tests.test_planner_support import sglang_help, vllm_help


def test_parse_help_reads_aliases_and_choices() -> None:
    help_ = parse_help(sglang_help())
    for flag in ("--model-path", "--model", "--tp-size", "--tensor-parallel-size", "--tp", "--mem-fraction-static"):
        assert help_.knows(flag), flag
    assert help_.choices["--speculative-algorithm"] == ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM")
    assert help_.choices["--mamba-scheduler-strategy"] == ("auto", "no_buffer", "extra_buffer")
    assert not help_.knows("--speculative-draft-tokens")


def test_a_flag_named_only_in_a_description_is_not_valid() -> None:
    parser = argparse.ArgumentParser(prog="launch_server.py")
    parser.add_argument("--mamba-radix-cache-strategy", help="Replaces --mamba-scheduler-strategy (removed).")
    help_ = parse_help(parser.format_help())
    assert help_.knows("--mamba-radix-cache-strategy")
    assert not help_.knows("--mamba-scheduler-strategy")


def test_usage_block_names_each_option_by_its_first_alias() -> None:
    usage = sglang_help().split("\n\n")[0]  # what argparse prints on an error: the usage block alone
    help_ = parse_help(usage)
    assert help_.knows("--model-path") and help_.knows("--tensor-parallel-size")
    assert not help_.knows("--tp-size")
    assert help_.choices["--speculative-algorithm"] == ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM")
    assert not parse_help("usage: x [-h] --model-path M\n").looks_complete(("--model-path", "--port"))


@pytest.mark.parametrize(
    ("typed", "meant", "help_text"),
    [
        ("--speculative-draft-tokens", "--speculative-num-draft-tokens", sglang_help()),
        ("--mem-fraction", "--mem-fraction-static", sglang_help()),
        ("--contex-length", "--context-length", sglang_help()),
        ("--max-running-request", "--max-running-requests", sglang_help()),
        ("--speculative-algo", "--speculative-algorithm", sglang_help()),
        ("--gpu-memory-utilisation", "--gpu-memory-utilization", vllm_help()),
        ("--max-model-length", "--max-model-len", vllm_help()),
        ("--tensor-parallel", "--tensor-parallel-size", vllm_help()),
    ],
)
def test_unknown_flag_gets_the_closest_valid_name(typed: str, meant: str, help_text: str) -> None:
    assert suggest_flag(typed, help_text) == meant
    assert plan_suggest_flag(typed, help_text) == meant


def test_nothing_close_gives_none() -> None:
    assert suggest_flag("--zzz-qqq", sglang_help()) is None


@given(st.sampled_from(sorted(f for f in parse_help(sglang_help()).flags if f.startswith("--"))))
def test_a_valid_flag_suggests_itself(flag: str) -> None:
    assert suggest_flag(flag, sglang_help()) == flag


def test_validate_argv_finds_unknown_flags_and_bad_choices() -> None:
    help_ = parse_help(sglang_help())
    problems = validate_argv(
        [
            "--model-path",
            "/m",
            "--speculative-draft-tokens",
            "4",
            "--speculative-algorithm",
            "MEDUSA",
            "--mamba-ssm-dtype=bfloat16",
            "--trust-remote-code",
        ],
        help_,
    )
    assert [p.flag for p in problems] == ["--speculative-draft-tokens", "--speculative-algorithm"]
    assert problems[0].suggestion == "--speculative-num-draft-tokens"
    assert "MEDUSA" in problems[1].message


def test_remove_flags_takes_values_and_leaves_booleans_alone() -> None:
    argv = ["--a", "1", "--trust-remote-code", "--b=2", "--c", "3"]
    out, removed = remove_flags(argv, ["--a", "--b", "--trust-remote-code"])
    assert out == ["--c", "3"]
    assert removed == ["--a", "--trust-remote-code", "--b"]
