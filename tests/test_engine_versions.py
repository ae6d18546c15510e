"""Planning against the real engines' captured releases (bot/simhost/enginehelp, from tools/capture_engine_help.py):
the renames found by diffing their parsers, flags fitted to the build the host has, and the seed request planned
with the flags each release offers."""

from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path

import pytest

from bot.models import Risk
from bot.simhost.captures import CAPTURES, capture_for, captured_versions, help_text
from bot.simhost.hostlib.simengine.argspec import add_captured_options
from planners.flag_changes import fit_flags_to_build
from planners.flag_resolve import adapt_argv, all_renames
from planners.flags import parse_help
from tests.test_planner_plan import arg, failed, ok, plan

TOOLS = Path(__file__).resolve().parent.parent / "tools"


def real_parser(engine: str, version: str) -> argparse.ArgumentParser:
    """A parser with the captured release's own options, aliases, choices and defaults."""
    parser = argparse.ArgumentParser(exit_on_error=False, add_help=False)
    options = json.loads((CAPTURES / f"{engine}-{capture_for(engine, version)}.json").read_text())["actions"]
    add_captured_options(parser, options)
    return parser


def test_captures_cover_the_asked_releases_and_agree_with_their_help_texts() -> None:
    assert {"0.5.9", "0.5.11", "0.5.23"} <= set(captured_versions("sglang"))
    assert {"0.11.0", "0.17.0", "0.20.0", "0.33.0", "0.34.0"} <= set(captured_versions("vllm"))
    for engine in ("sglang", "vllm"):
        for version in captured_versions(engine):
            record = json.loads((CAPTURES / f"{engine}-{version}.json").read_text())
            assert record["method"] in ("import", "source") and len(record["actions"]) > 150
            full = CAPTURES / f"{engine}-{version}.help-all.txt"
            listed = parse_help((full if full.exists() else CAPTURES / f"{engine}-{version}.help.txt").read_text())
            options = {o for a in record["actions"] for o in a["options"]}
            # a handful of SGLang options are registered with help=SUPPRESS and so never printed
            assert len(options - listed.flags) <= 3, sorted(options - listed.flags)


def test_the_rename_table_is_what_the_captured_parsers_say() -> None:
    spec = importlib.util.spec_from_file_location("engine_renames_tool", TOOLS / "engine_renames.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)  # type: ignore[union-attr]
    RENAMES = all_renames()
    assert tool.renames() == RENAMES, "planners/engines/*/renames.py is stale: rerun tools/engine_renames.py"
    found = {(r["old"], tuple(r["new"])) for r in RENAMES["sglang"]}
    assert ("--cuda-graph-max-bs", ("--cuda-graph-max-bs-decode", "--cuda-graph-max-bs-prefill")) in found
    assert ("--mamba-scheduler-strategy", ("--mamba-radix-cache-strategy",)) in found
    assert ("--nsa-prefill-backend", ("--dsa-prefill-backend",)) in found


def test_the_old_name_is_rejected_by_the_new_build_as_an_ambiguous_prefix(capsys) -> None:
    with pytest.raises(SystemExit):
        real_parser("sglang", "0.5.23").parse_args(["--model-path", "m", "--cuda-graph-max-bs", "8"])
    assert "ambiguous option: --cuda-graph-max-bs could match" in capsys.readouterr().err
    parsed = real_parser("sglang", "0.5.11").parse_args(["--model-path", "m", "--cuda-graph-max-bs", "8"])
    assert parsed.cuda_graph_max_bs == 8


def test_flags_are_fitted_to_the_build_both_ways_and_drops_are_said() -> None:
    new, old = parse_help(help_text("sglang", "0.5.23")), parse_help(help_text("sglang", "0.5.11"))
    argv, changes = adapt_argv("sglang", ["--cuda-graph-max-bs", "8", "--mamba-scheduler-strategy", "extra_buffer"], new)
    assert argv == ["--cuda-graph-max-bs-decode", "8", "--cuda-graph-max-bs-prefill", "8",
                    "--mamba-radix-cache-strategy", "extra_buffer"]
    assert all(not c.dropped for c in changes)
    argv, _ = adapt_argv("sglang", ["--mamba-radix-cache-strategy", "extra_buffer"], old)
    assert argv == ["--mamba-scheduler-strategy", "extra_buffer"]
    reasons: list[str] = []
    risks: list[Risk] = []
    argv = fit_flags_to_build("sglang", ["--enable-nan-detection", "--tp-size", "2"], new, True, "0.5.23", reasons, risks)
    assert argv == ["--tp-size", "2"]
    assert risks[0].code == "flag_dropped" and "--enable-nan-detection" in risks[0].message
    assert "0.5.23 removed it" in risks[0].message


@pytest.mark.parametrize("version", ["0.5.11", "0.5.23"])
def test_seed_request_on_sglang_uses_the_flags_this_release_has(version: str) -> None:
    facts = {"engines": {"sglang": version}, "engine_help": {"sglang": help_text("sglang", version)}}
    p = ok(plan("CT129", "Qwen3.6-27B", speculative="mtp", facts_kwargs=facts))
    new = version == "0.5.23"
    strategy = "--mamba-radix-cache-strategy" if new else "--mamba-scheduler-strategy"
    assert arg(p.argv, strategy) == "extra_buffer" and "--disable-radix-cache" not in p.argv
    assert p.env["SGLANG_ENABLE_SPEC_V2"] == "1"
    assert ("--cuda-graph-max-bs" in p.argv) is not new
    assert (arg(p.argv, "--cuda-graph-max-bs-decode") is not None) is new
    parsed = real_parser("sglang", version).parse_args(p.argv[3:])  # the release's own parser takes every flag
    assert parsed.speculative_num_steps == 3 and parsed.speculative_eagle_topk == 1
    if new:
        assert any("--cuda-graph-max-bs -> --cuda-graph-max-bs-decode" in r for r in p.reasons)


def test_without_a_help_text_the_version_decides_the_names() -> None:
    p = ok(plan("CT129", "Qwen3.6-27B", speculative="mtp", facts_kwargs={"engines": {"sglang": "0.5.23"}}))
    assert arg(p.argv, "--mamba-radix-cache-strategy") == "extra_buffer" and "--cuda-graph-max-bs" not in p.argv
    real_parser("sglang", "0.5.23").parse_args(p.argv[3:])


def test_sglang_release_too_old_for_the_model_is_refused_with_the_reason() -> None:
    facts = {"engines": {"sglang": "0.5.9"}, "engine_help": {"sglang": help_text("sglang", "0.5.9")}}
    assert ">= 0.5.10" in failed(plan("CT129", "Qwen3.6-27B", speculative="mtp", facts_kwargs=facts)).reason


@pytest.mark.parametrize("version", ["0.17.0", "0.20.0", "0.33.0", "0.34.0"])
def test_seed_request_on_vllm_parses_with_that_release(version: str) -> None:
    facts = {"engines": {"vllm": version}, "engine_help": {"vllm": help_text("vllm", version)}}
    p = ok(plan("CT129", "Qwen3.6-27B", speculative="mtp", engine="vllm", facts_kwargs=facts))
    parsed = real_parser("vllm", version).parse_args(p.argv[3:])
    assert parsed.speculative_config == {"method": "mtp", "num_speculative_tokens": 1}
    assert any(f"checked against vLLM {version}'s own --help" in r for r in p.reasons)
