"""The engine core of the simulated vLLM: workers on their GPUs, weights, KV cache, CUDA graphs."""

from __future__ import annotations

from vllm.v1.core.kv_cache_utils import check_enough_kv_cache_memory, kv_cache_tokens
from vllm.v1.worker.gpu_worker import Worker


class EngineCore:
    def __init__(self, engine, facts, args, max_model_len: int) -> None:
        self.engine, self.facts, self.args, self.max_model_len = engine, facts, args, max_model_len
        self.workers: list[Worker] = []
        self.kv_tokens = 0

    def init_workers(self) -> None:
        engine, args = self.engine, self.args
        visible = engine.visible()
        for rank in range(args.tensor_parallel_size):
            index = visible[rank] if rank < len(visible) else None
            gpu = engine.gpu(index) if index is not None else None
            free = engine.free_gib(index) if index is not None else 0.0
            worker = Worker(rank, rank, gpu, free, args.gpu_memory_utilization)
            worker.init_device()
            self.workers.append(worker)
        engine.placement = visible[: args.tensor_parallel_size]

    def load_model(self) -> None:
        for worker in self.workers:
            worker.load_model(
                self.facts, self.args.tensor_parallel_size, self.args.quantization, self.args.language_model_only
            )

    def initialize_kv_caches(self) -> float:
        # "we take the minimum memory size across all workers"
        available = min(
            w.determine_available_memory(self.args.enforce_eager, self.args.kv_cache_memory_bytes) for w in self.workers
        )
        tp, dtype = self.args.tensor_parallel_size, self.args.kv_cache_dtype
        self.kv_tokens = kv_cache_tokens(self.facts, available, tp, dtype)
        check_enough_kv_cache_memory(self.facts, available, self.kv_tokens, self.max_model_len, tp, dtype)
        return available
