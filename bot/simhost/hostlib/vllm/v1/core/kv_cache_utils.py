"""KV cache sizing of the simulated vLLM (vllm/v1/core/kv_cache_utils.py): tokens that fit, and the check that
one request of max_model_len fits, with vLLM's message."""

from __future__ import annotations

from simengine.modelinfo import GIB, ModelFacts


def kv_cache_tokens(facts: ModelFacts, available_gib: float, tp: int, kv_cache_dtype: str) -> int:
    dtype_bytes = 1 if kv_cache_dtype.startswith("fp8") else 2
    budget = available_gib * (0.8 if facts.hybrid_linear else 1.0)  # hybrid models page GDN state in the same pool
    return int(budget * GIB / facts.kv_bytes_per_token(tp, dtype_bytes))


def check_enough_kv_cache_memory(
    facts: ModelFacts, available_gib: float, tokens: int, max_model_len: int, tp: int, kv_cache_dtype: str
) -> None:
    if tokens >= max_model_len:
        return
    dtype_bytes = 1 if kv_cache_dtype.startswith("fp8") else 2
    needed = max_model_len * facts.kv_bytes_per_token(tp, dtype_bytes) / GIB
    raise ValueError(
        f"To serve at least one request with the models's max seq len ({max_model_len}), ({needed:.2f} GiB KV cache "
        f"is needed, which is larger than the available KV cache memory ({available_gib:.2f} GiB). Based on the "
        f"available memory, the estimated maximum model length is {tokens}. Try increasing "
        "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."
    )
