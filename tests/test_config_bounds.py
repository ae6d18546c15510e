"""A hostile or broken config.json is a planning failure naming the key and the value, never a crash, a negative
plan or a billion-entry list; random configs always give a plan or a failure, in bounded memory."""

from __future__ import annotations

import copy
import math
import tracemalloc
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.models import DeployRequest, LaunchPlan, PlanFailure
from planners.config_bounds import BOUNDS, QUANT_BOUNDS
from planners.plan import make_plan
from tests.test_planner_support import POLICY, fleet_facts, host_config

HOST, MODEL = "CT129", "Qwen3.6-27B"
#: Far above what planning a real model takes (a few MB); a per-layer list of 1e9 entries is gigabytes.
PEAK_BYTES = 64 << 20


def _plan_with(config: Any) -> LaunchPlan | PlanFailure:
    facts = fleet_facts(HOST, MODEL)
    assert facts.model is not None and facts.model.config is not None
    folder = facts.model.model_copy(update={"config": config})
    return make_plan(DeployRequest(action="start", model=MODEL, host=HOST), facts.model_copy(update={"model": folder}),
                     host_config(HOST), POLICY)


def _real_config() -> dict[str, Any]:
    facts = fleet_facts(HOST, MODEL)
    assert facts.model is not None and facts.model.config is not None
    return copy.deepcopy(facts.model.config)


def _set(config: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """Put ``value`` where the planner reads ``key`` (text_config when the model has one)."""
    inner = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    inner[key] = value
    return config


def test_the_real_config_still_plans() -> None:
    assert isinstance(_plan_with(_real_config()), LaunchPlan)


@pytest.mark.parametrize(("key", "value", "said"), [
    ("num_hidden_layers", 1e9, "num_hidden_layers = 1000000000.0 is outside"),
    ("num_hidden_layers", 10**9, "num_hidden_layers = 1000000000 is outside"),
    ("hidden_size", -5120, "hidden_size = -5120 is outside"),
    ("vocab_size", -1, "vocab_size = -1 is outside"),
    ("vocab_size", float("nan"), "vocab_size must be a finite number, got nan"),
    ("num_attention_heads", float("inf"), "num_attention_heads must be a finite number, got inf"),
    ("intermediate_size", float("-inf"), "intermediate_size must be a finite number, got -inf"),
    ("num_key_value_heads", "four", "num_key_value_heads must be a whole number, got 'four'"),
    ("head_dim", 128.5, "head_dim must be a whole number, got 128.5"),
    ("num_experts", 10**12, "num_experts = 1000000000000 is outside"),
    ("hidden_size", True, "hidden_size must be a whole number, got True"),
])
def test_an_absurd_value_is_a_planning_failure_naming_key_and_value(key: str, value: Any, said: str) -> None:
    result = _plan_with(_set(_real_config(), key, value))
    assert isinstance(result, PlanFailure), result
    assert said in result.reason and "config.json" in result.reason


def test_quantization_numbers_are_bounded_too() -> None:
    config = _real_config()
    config["quantization_config"] = {"quant_method": "gptq", "bits": float("nan"), "group_size": 128}
    result = _plan_with(config)
    assert isinstance(result, PlanFailure) and "quantization_config.bits must be a finite number" in result.reason


def test_a_billion_layers_is_refused_in_bounded_memory() -> None:
    tracemalloc.start()
    try:
        result = _plan_with(_set(_real_config(), "num_hidden_layers", 1e9))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(result, PlanFailure)
    assert peak < PEAK_BYTES


_KEYS = sorted(BOUNDS) + ["layer_types", "mlp_only_layers", "model_type", "torch_dtype", "tie_word_embeddings"]
_NUMBERS = st.one_of(
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 1, 2, 7, 64, 4096, 10**9, -1, 1e9, 1e300, float("nan")]),
)
_VALUES = st.one_of(_NUMBERS, st.none(), st.booleans(), st.text(max_size=8),
                    st.lists(st.one_of(st.integers(-5, 5000), st.text(max_size=6)), max_size=40))


@st.composite
def _configs(draw: st.DrawFn) -> dict[str, Any]:
    config = _real_config() if draw(st.booleans()) else {}
    changes = draw(st.dictionaries(st.sampled_from(_KEYS), _VALUES, max_size=8))
    for key, value in changes.items():
        _set(config, key, value) if draw(st.booleans()) else config.__setitem__(key, value)
    if draw(st.booleans()):
        config["quantization_config"] = {"quant_method": draw(st.sampled_from(["gptq", "awq", "fp8", "x"])),
                                         **draw(st.dictionaries(st.sampled_from(sorted(QUANT_BOUNDS)), _NUMBERS,
                                                                max_size=3))}
    return config


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_configs())
def test_random_configs_give_a_plan_or_a_failure_in_bounded_memory(config: dict[str, Any]) -> None:
    tracemalloc.start()
    try:
        result = _plan_with(config)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(result, (LaunchPlan, PlanFailure))
    assert peak < PEAK_BYTES
    if isinstance(result, LaunchPlan):
        # Whatever was planned is physical: positive sizes, finite numbers.
        assert result.per_gpu and all(b.weights_bytes > 0 and b.kv_bytes >= 0 for b in result.per_gpu)
        assert result.context_length > 0 and math.isfinite(result.context_length)
