"""Compatibility table: versions, architectures, MTP, FP8 by compute capability."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.models import GpuInfo
from planners import compat
from planners.engines.vllm.compat import vllm_mtp_method
from planners.model import model_spec
from tests.test_planner_support import load_config


@pytest.mark.parametrize(
    ("installed", "minimum", "expected"),
    [
        ("0.5.10", "0.5.9", True),
        ("0.5.9", "0.5.10", False),  # not a string comparison
        ("0.5.10.post1", "0.5.10", True),
        ("0.11.0+cu128", "0.11.0", True),
        ("0.17.0rc1", "0.17.0", True),  # a release candidate counts as its release line
        ("v0.4.6.post1", "0.4.6", True),
        ("0.16.0", "0.17.0", False),
        (None, "0.5.9", None),
        ("not a version", "0.5.9", None),
    ],
)
def test_version_comparison(installed: str | None, minimum: str, expected: bool | None) -> None:
    assert compat.at_least(installed, minimum) is expected


@given(
    st.tuples(st.integers(0, 30), st.integers(0, 30), st.integers(0, 30)),
    st.tuples(st.integers(0, 30), st.integers(0, 30), st.integers(0, 30)),
)
def test_version_order_is_numeric(a: tuple[int, int, int], b: tuple[int, int, int]) -> None:
    assert compat.at_least(".".join(map(str, a)), ".".join(map(str, b))) is (a >= b)


def spec_of(name: str):
    return model_spec(load_config(name))


def test_qwen36_needs_sglang_0_5_10_and_vllm_0_17() -> None:
    spec = spec_of("Qwen3.6-27B")
    too_old = compat.check_engine(spec, "Qwen3.6-27B", "sglang", "0.5.9")
    assert not too_old.ok and "0.5.10" in too_old.problems[0]
    assert compat.check_engine(spec, "Qwen3.6-27B", "sglang", "0.5.10").ok
    assert not compat.check_engine(spec, "Qwen3.6-27B", "vllm", "0.16.0").ok
    assert compat.check_engine(spec, "Qwen3.6-27B", "vllm", "0.17.1").ok
    # the same architecture under its Qwen3.5 name needs only SGLang 0.5.9
    assert compat.check_engine(spec_of("Qwen3.5-27B"), "Qwen3.5-27B", "sglang", "0.5.9").ok


def test_old_engine_is_a_warning_not_a_refusal() -> None:
    check = compat.check_engine(spec_of("Llama-3.1-8B-Instruct"), "Llama-3.1-8B-Instruct", "vllm", "0.8.5")
    assert check.ok and any("older than 0.10.0" in w for w in check.warnings)
    unknown = compat.check_engine(spec_of("Qwen3.6-27B"), "Qwen3.6-27B", "sglang", None)
    assert unknown.ok and unknown.warnings


def test_mtp_heads_known_unknown_and_absent() -> None:
    assert compat.mtp_heads(spec_of("Qwen3.6-27B")) is True
    assert compat.mtp_heads(spec_of("DeepSeek-V3")) is True
    assert compat.mtp_heads(spec_of("Qwen3.5-27B")) is None  # key missing: unknown
    assert compat.mtp_heads(spec_of("Llama-3.1-8B-Instruct")) is False  # architecture ships none


def test_mtp_support_by_engine_version() -> None:
    qwen = spec_of("Qwen3.6-27B")
    assert compat.check_mtp(qwen, "vllm", "0.17.1").ok
    assert not compat.check_mtp(qwen, "vllm", "0.16.0").ok
    assert vllm_mtp_method(qwen, "0.17.1") == "mtp"
    assert vllm_mtp_method(spec_of("DeepSeek-V3"), "0.9.2") == "deepseek_mtp"
    assert vllm_mtp_method(spec_of("DeepSeek-V3"), None) == "mtp"


def gpu(name: str, cc: str | None = None) -> GpuInfo:
    return GpuInfo(
        index=0, name=name, memory_total_bytes=1, memory_used_bytes=0, memory_free_bytes=1, compute_capability=cc
    )


def test_compute_capability_from_probe_or_name() -> None:
    assert compat.compute_capability(gpu("NVIDIA RTX A6000")) == (8, 6)
    assert compat.compute_capability(gpu("NVIDIA RTX 6000 Ada Generation")) == (8, 9)
    assert compat.compute_capability(gpu("NVIDIA GeForce RTX 4090")) == (8, 9)
    assert compat.compute_capability(gpu("NVIDIA H100 80GB HBM3")) == (9, 0)
    assert compat.compute_capability(gpu("NVIDIA A100-SXM4-80GB")) == (8, 0)
    assert compat.compute_capability(gpu("Mystery GPU", "12.1")) == (12, 1)
    assert compat.compute_capability(gpu("Mystery GPU")) is None


def test_fp8_by_engine_and_compute_capability() -> None:
    assert compat.fp8_mode("sglang", (8, 6))[0] == "unsupported"
    assert "fp8e4nv" in compat.fp8_mode("sglang", (8, 6))[1]
    assert compat.fp8_mode("vllm", (8, 6))[0] == "weight_only"
    assert compat.fp8_mode("vllm", (8, 0))[0] == "weight_only"
    assert compat.fp8_mode("sglang", (8, 9))[0] == "native"
    assert compat.fp8_mode("vllm", (9, 0))[0] == "native"
    assert compat.fp8_mode("vllm", (7, 0))[0] == "unsupported"
    assert compat.fp8_mode("sglang", None)[0] == "unknown"


def test_trust_remote_code_reasons() -> None:
    assert "auto_map" in (compat.needs_trust_remote_code(spec_of("DeepSeek-V3"), "vllm", False) or "")
    assert compat.needs_trust_remote_code(spec_of("Llama-3.1-8B-Instruct"), "sglang", True)
    assert compat.needs_trust_remote_code(spec_of("Llama-3.1-8B-Instruct"), "sglang", False) is None
    assert compat.needs_trust_remote_code(spec_of("Qwen3.6-27B"), "sglang", False)
