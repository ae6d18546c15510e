"""Weights, KV per token, per-request state and engine budgets against the figures in the engine notes."""

from __future__ import annotations

import pytest

from bot.models import ModelFolder
from planners import memory
from planners.engines.sglang import memory as sglang_memory
from planners.model import model_spec
from tests.test_planner_support import GIB, MIB, load_config

GB = 1e9


def spec_of(name: str):
    return model_spec(load_config(name))


@pytest.mark.parametrize(
    ("name", "real_bytes"),
    [
        ("Llama-3.1-8B-Instruct", 16.06e9),  # index total_size 16,060,522,496
        ("Qwen3.6-27B", 55.56e9),  # index total_size 55,562,855,904
        ("Qwen3-30B-A3B", 61e9),  # "~61GB in bf16"
        ("DeepSeek-V3", 642 * GIB),  # FP8 checkpoint incl. MTP layer and bf16 embeddings (~642 GiB)
    ],
)
def test_parameter_path_within_3_percent_of_real_sizes(name: str, real_bytes: float) -> None:
    value, notes = memory.weight_bytes(spec_of(name), None)
    assert value == pytest.approx(real_bytes, rel=0.03)
    assert "parameters in config.json" in notes[0]


@pytest.mark.parametrize(
    ("name", "gb"),
    [
        ("Llama-3.1-70B-Instruct", 141.1),
        ("Mistral-7B-Instruct-v0.3", 14.5),
        ("Qwen3-8B", 16.4),
        ("Qwen3-32B", 65.5),
        ("gemma-3-27b-it", 54.8),
    ],
)
def test_parameter_path_matches_sizes_md_arithmetic(name: str, gb: float) -> None:
    assert memory.weight_bytes(spec_of(name), None)[0] / GB == pytest.approx(gb, rel=0.03)


def folder(**kwargs) -> ModelFolder:
    return ModelFolder(name="m", path="/models/m", exists=True, **kwargs)


def test_index_total_size_wins_and_agreeing_sources_give_no_warning() -> None:
    spec = spec_of("Qwen3.6-27B")
    value, notes = memory.weight_bytes(
        spec, folder(index_total_size=55_562_855_904, shard_bytes=55_563_000_000, shard_count=15)
    )
    assert value == 55_562_855_904
    assert "index" in notes[0]
    assert not any(n.startswith("warning") for n in notes)


def test_shards_used_without_index_and_stub_index_ignored() -> None:
    spec = spec_of("Llama-3.1-8B-Instruct")
    value, notes = memory.weight_bytes(spec, folder(index_total_size=0, shard_bytes=16_100_000_000, shard_count=4))
    assert value == 16_100_000_000
    assert any("stub" in n for n in notes)


def test_disagreement_over_5_percent_is_flagged() -> None:
    spec = spec_of("Llama-3.1-8B-Instruct")
    _, notes = memory.weight_bytes(spec, folder(index_total_size=8_000_000_000))  # e.g. a 4-bit checkpoint
    assert any(n.startswith("warning") and "disagree" in n for n in notes)
    _, notes = memory.weight_bytes(spec, folder(index_total_size=16_060_522_496, shard_bytes=12_000_000_000))
    assert any("shard may be missing" in n for n in notes)


def test_loaded_weights_drop_mtp_without_speculation_and_halve_linears_with_fp8() -> None:
    spec = spec_of("Qwen3.6-27B")
    full, _ = memory.loaded_weight_bytes(spec, 55_562_855_904, mtp_enabled=True)
    without, notes = memory.loaded_weight_bytes(spec, 55_562_855_904, mtp_enabled=False)
    assert full - without == pytest.approx(0.85e9, rel=0.05)  # "MTP head ... ~850 MB"
    assert any("MTP head" in n for n in notes)
    fp8, _ = memory.loaded_weight_bytes(spec, 55_562_855_904, mtp_enabled=True, online_fp8=True)
    assert fp8 == pytest.approx(full * 0.555, rel=0.03)  # linears halve; embeddings, head, vision stay 16-bit


@pytest.mark.parametrize(
    ("name", "per_token"),
    [
        ("Llama-3.1-8B-Instruct", 131_072),
        ("Llama-3.1-70B-Instruct", 327_680),
        ("Mistral-7B-Instruct-v0.3", 131_072),
        ("Qwen3-8B", 147_456),
        ("Qwen3-32B", 262_144),
        ("Qwen3-30B-A3B", 98_304),
        ("Qwen3.5-27B", 65_536),
        ("Qwen3.6-27B", 65_536),
        ("DeepSeek-V3", 70_272),
    ],
)
def test_kv_bytes_per_token_table_of_memory_model_md(name: str, per_token: int) -> None:
    assert memory.kv_bytes_per_token(spec_of(name)) == per_token


def test_kv_split_across_tp_replication_mla_fp8_and_sliding() -> None:
    qwen = spec_of("Qwen3.6-27B")
    assert memory.kv_bytes_per_token(qwen, tp=2) == 32 * 1024
    assert memory.kv_bytes_per_token(qwen, tp=2, extra_full_layers=1) == 34 * 1024  # + the MTP layer
    assert memory.kv_bytes_per_token(qwen, tp=8) == 2 * 16 * 1 * 256 * 2  # 4 KV heads: one replicated per rank
    assert memory.kv_bytes_per_token(qwen, kv_dtype_bytes=1) == 32 * 1024
    deepseek = spec_of("DeepSeek-V3")
    assert memory.kv_bytes_per_token(deepseek, tp=8) == 70_272  # the latent is not split
    gemma = spec_of("gemma-3-27b-it")
    assert memory.kv_bytes_per_token(gemma, sliding_as_full=True) == 507_904
    assert memory.kv_bytes_per_token(gemma) == 2 * 10 * 16 * 128 * 2
    assert memory.sliding_state_bytes(gemma, 1, 2, 100_000) == 52 * 1024 * 2 * 16 * 128 * 2


def test_gated_deltanet_state_per_request() -> None:
    spec = spec_of("Qwen3.6-27B")
    fp32 = memory.linear_state_bytes(spec, tp=2, ssm_dtype_bytes=4)
    assert fp32 == 48 * (24 * 128 * 128 * 4 + 5120 * 3 * 2)
    assert fp32 / MIB == pytest.approx(73, abs=1)  # "~73 MiB/GPU fp32"
    assert memory.linear_state_bytes(spec, tp=2, ssm_dtype_bytes=2) / MIB == pytest.approx(37, abs=1)
    assert memory.linear_state_bytes(spec_of("Qwen3-8B"), tp=1) == 0


@pytest.mark.parametrize(
    ("gpu_mib", "tp", "speculative", "expected"),
    [
        (81_559, 1, False, 0.835),  # H100 80 GB
        (81_559, 1, True, 0.81),
        (143_771, 1, False, 0.907),  # H200
        (143_771, 1, True, 0.892),
        (49_140, 2, True, 0.816),  # RTX A6000, reserved 9024 MiB
        (49_140, 2, False, 0.858),
    ],
)
def test_sglang_default_mem_fraction_matches_notes(gpu_mib: int, tp: int, speculative: bool, expected: float) -> None:
    defaults = sglang_memory.sglang_defaults(gpu_mib * MIB, tp, speculative=speculative, spec=spec_of("Qwen3-8B"))
    assert defaults.fraction == pytest.approx(expected, abs=0.002)


def test_sglang_default_for_qwen36_includes_the_vision_factor() -> None:
    defaults = sglang_memory.sglang_defaults(49_140 * MIB, 2, speculative=True, spec=spec_of("Qwen3.6-27B"))
    assert defaults.reserved_mib == 9024
    assert defaults.vlm_factor == pytest.approx(0.925, abs=0.002)
    assert defaults.fraction == pytest.approx(0.75, abs=0.01)  # "≈ 0.75"


def test_budget_sglang_pool_pays_for_other_processes_and_vllm_needs_free_memory() -> None:
    spec = spec_of("Llama-3.1-8B-Instruct")
    total = 49_140 * MIB
    weights = 16_060_522_496
    idle = memory.budget(spec, weights, total, total, 1, "sglang", 0.85)
    shared = memory.budget(spec, weights, total, total - 10 * GIB, 1, "sglang", 0.85)
    assert idle.pool_bytes - shared.pool_bytes == 10 * GIB
    assert idle.kv_tokens == idle.kv_bytes // 131_072
    ok = memory.budget(spec, weights, total, total, 1, "vllm", 0.9, overhead=GIB)
    refused = memory.budget(spec, weights, total, total - 10 * GIB, 1, "vllm", 0.9, overhead=GIB)
    assert ok.startup_ok and not refused.startup_ok
    assert ok.pool_bytes == int(0.9 * total) - weights - GIB


def test_budget_reserves_state_and_the_sglang_mamba_share() -> None:
    spec = spec_of("Qwen3.6-27B")
    total = 49_140 * MIB
    plain = memory.budget(spec, 55_562_855_904, total, total, 2, "sglang", 0.85, mtp_enabled=True)
    assert plain.draft_bytes == 2 * 248_320 * 5120 * 2 // 2  # SGLang's MTP runner: its own embedding + head
    per_request = 100 * MIB
    reserved = memory.budget(
        spec,
        55_562_855_904,
        total,
        total,
        2,
        "sglang",
        0.85,
        mtp_enabled=True,
        state_per_request=per_request,
        concurrency=4,
    )
    assert plain.kv_bytes - reserved.kv_bytes == 4 * per_request
    share = sglang_memory.sglang_mamba_share(radix_cache=True)
    split = memory.budget(
        spec,
        55_562_855_904,
        total,
        total,
        2,
        "sglang",
        0.85,
        mtp_enabled=True,
        state_per_request=per_request,
        concurrency=4,
        state_share=share,
    )
    assert split.kv_bytes == pytest.approx(plain.pool_bytes / 1.9, rel=0.001)
    assert sglang_memory.sglang_mamba_share(radix_cache=False) == 0
