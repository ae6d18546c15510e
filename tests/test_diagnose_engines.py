"""Engine-specific knowledge reaches the diagnoser through the engine registry (planners/engines): the matcher reads
the engine-neutral rules plus the deployment's engine's crash rules, and the advice spells flags with
``engine.flag(neutral_id)``. A test engine registered here shows that adding an engine needs no diagnoser change."""

from __future__ import annotations

import re

import pytest

from bot.diagnose import diagnose
from bot.diagnose.rules import RULES, rules_for
from planners.engines import registry
from planners.engines.base import CrashRule, Discovery, EngineBase
from planners.engines.logdialect import LogDialect
from planners.engines.sglang.crash_rules import RULES as SGLANG_RULES
from planners.engines.vllm.crash_rules import RULES as VLLM_RULES


class _TestEngine(EngineBase):
    """A made-up engine with one crash wording of its own and its own spelling of the memory fraction."""

    name = "toyserve"
    label = "ToyServe"
    discovery = Discovery(package="toyserve", module="toyserve.server")
    core_flags = ("--model",)
    flag_names = {"model": "--model", "port": "--port", "tp": "--shards", "mem_fraction": "--vram-share",
                  "context": "--window", "graph_bs": "--graph-batch", "no_graph": "--no-graphs",
                  "batch_tokens": "--chunk"}
    dialect = LogDialect(fingerprint=re.compile(r"toyserve"), ready=(re.compile(r"toyserve ready"),),
                         weights_loaded=(), kv_allocated=())
    crash_rules = (CrashRule("toy_pool", "kv_cache_insufficient", re.compile(r"toy pool exhausted"), 82, 0.9,
                             "the toy KV pool does not fit", kind="raise"),)
    issues_url = "example.org/toyserve/issues"


@pytest.fixture
def toy_engine():
    engine = registry.register(_TestEngine())
    rules_for.cache_clear()
    yield engine
    registry.unregister(engine.name)
    rules_for.cache_clear()


def test_each_engine_contributes_its_own_rules_and_only_them() -> None:
    neutral = {rule.name for rule in RULES}
    vllm = {rule.name for rule in rules_for("vllm")} - neutral
    sglang = {rule.name for rule in rules_for("sglang")} - neutral
    assert vllm == {rule.name for rule in VLLM_RULES} and "v1_feature" in vllm
    assert sglang == {rule.name for rule in SGLANG_RULES} and "kv_not_enough_memory" in sglang
    assert not vllm & sglang
    # An unknown engine: every engine's rules (the log may be either's).
    assert {rule.name for rule in rules_for(None)} >= neutral | vllm | sglang


# vllm/worker/worker.py (V0): "No available memory for the cache blocks. Try increasing `gpu_memory_utilization`
# when initializing the engine."
_VLLM_ONLY = ("ERROR 05-02 10:11:12 engine.py:389] ValueError: No available memory for the cache blocks. Try "
              "increasing `gpu_memory_utilization` when initializing the engine.\n")


def test_an_engine_specific_wording_counts_for_its_engine_and_for_an_unknown_one() -> None:
    assert diagnose(_VLLM_ONLY, engine="vllm").category == "kv_cache_insufficient"
    assert diagnose(_VLLM_ONLY).category == "kv_cache_insufficient"
    # SGLang never prints it: with the engine known to be SGLang the line is only an unrecognised error.
    assert diagnose(_VLLM_ONLY, engine="sglang").category == "other"


def test_a_registered_engine_brings_its_crash_rules_and_flag_spellings(toy_engine) -> None:
    log = "toyserve 1.0 starting\nRuntimeError: toy pool exhausted while reserving the cache\n"
    result = diagnose(log, engine="toyserve")
    assert result.category == "kv_cache_insufficient"
    assert "toy KV pool" in result.cause
    assert any("--vram-share" in step for step in result.next_steps), result.next_steps
    assert not any("--mem-fraction-static" in step or "--gpu-memory-utilization" in step
                   for step in result.next_steps)
    assert diagnose(log, engine="sglang").category == "other"


def test_advice_without_a_known_engine_names_every_engines_spelling() -> None:
    log = ("[2026-01-05 10:00:00] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=1.20 GB\n"
           "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: "
           "mem_fraction_static=0.5\n")
    steps = " ".join(diagnose(log, engine="sglang").next_steps)
    assert "--mem-fraction-static" in steps and "--gpu-memory-utilization" not in steps
    # A CUDA-graph capture failure names no engine: the advice gives each registered engine's spelling.
    generic = diagnose("RuntimeError: CUDA error: operation not permitted when stream is capturing\n")
    assert generic.category == "cuda_graph_oom"
    words = " ".join(generic.next_steps)
    for engine in registry.engines():
        assert f"{engine.flag('graph_bs')} ({engine.label})" in words, words
