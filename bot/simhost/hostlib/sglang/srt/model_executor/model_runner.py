"""Memory accounting of the simulated SGLang, per TP rank, with the real formulas and the real failures:
weights that do not fit raise torch's CUDA OOM; a static budget with no room left for the KV pool raises
"Not enough memory. Please try to increase --mem-fraction-static." (MEMORY_MODEL.md §2 for the defaults)."""

from __future__ import annotations

from dataclasses import dataclass

from simengine.compat import supported_architectures, supports
from simengine.errors import OutOfMemoryError
from simengine.modelinfo import GIB, ModelFacts

MIB = 1 << 20
CUDA_CONTEXT_GIB = 0.48  # what torch's CUDA context and NCCL take before any weight is loaded


def default_memory_settings(gpu_mem_mib: int, tp: int, speculative_algorithm: str | None) -> tuple[float, int, int]:
    """(mem_fraction_static, chunked_prefill_size, cuda_graph_max_bs) as ServerArgs._handle_gpu_memory_settings."""
    if gpu_mem_mib < 35 * 1024:
        chunked, graph_bs = 2048, (24 if tp < 4 else 80)
    elif gpu_mem_mib < 60 * 1024:
        chunked, graph_bs = 4096, (32 if tp < 4 else 160)
    elif gpu_mem_mib < 160 * 1024:
        chunked, graph_bs = 8192, (256 if tp < 4 else 512)
    else:
        chunked, graph_bs = 16384, 512
    reserved = 512 + max(chunked, 2048) * 1.5 + graph_bs * 2 + tp / 8 * 1024
    if gpu_mem_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    if speculative_algorithm == "STANDALONE":
        reserved += 6 * 1024
    elif speculative_algorithm not in (None, "NGRAM"):
        reserved += 2 * 1024
    return round((gpu_mem_mib - reserved) / gpu_mem_mib, 3), chunked, graph_bs


@dataclass
class RankMemory:
    """One rank's figures in GB (GiB, which SGLang prints as "GB")."""

    total: float
    avail_before_load: float
    weights: float = 0.0
    kv_tokens: int = 0
    kv_size: float = 0.0  # K and V together
    mamba_size: float = 0.0
    max_mamba_cache_size: int = 0
    graph: float = 0.0

    @property
    def avail_after_load(self) -> float:
        return self.avail_before_load - self.weights

    @property
    def avail_after_pool(self) -> float:
        return self.avail_after_load - self.kv_size - self.mamba_size

    @property
    def avail_after_graph(self) -> float:
        return self.avail_after_pool - self.graph

    @property
    def used_mib(self) -> int:
        return int((CUDA_CONTEXT_GIB + self.weights + self.kv_size + self.mamba_size + self.graph) * 1024)


class ModelRunner:
    def __init__(
        self,
        server_args,
        facts: ModelFacts,
        version: str,
        rank: int,
        gpu: dict,
        free_gib: float,
        mem_fraction_static: float,
    ) -> None:
        self.server_args = server_args
        self.facts = facts
        self.version = version
        self.tp_rank = rank
        self.gpu = gpu
        self.mem_fraction_static = mem_fraction_static
        total = gpu["memory_total_mib"] / 1024
        self.memory = RankMemory(total=total, avail_before_load=free_gib - CUDA_CONTEXT_GIB)

    def load_model(self) -> None:
        facts, args = self.facts, self.server_args
        if not supports("sglang", self.version, facts.architecture):
            raise ValueError(
                f"Model architectures ['{facts.architecture}'] are not supported for now. Supported architectures: "
                f"dict_keys({supported_architectures('sglang', self.version)})"
            )
        total_num_heads = facts.num_attention_heads
        assert total_num_heads % args.tp_size == 0
        fp8 = args.quantization == "fp8" or facts.fp8_checkpoint
        if fp8 and float(self.gpu["compute_cap"]) < 8.9:
            raise ValueError(
                "type fp8e4nv not supported in this architecture. The supported fp8 dtypes are ('fp8e4b15', 'fp8e5')"
            )
        weights = facts.checkpoint_bytes / args.tp_size / GIB
        if args.quantization == "fp8" and not facts.fp8_checkpoint:
            weights /= 2  # online FP8 from a BF16 checkpoint
        memory = self.memory
        if weights > memory.avail_before_load:
            allocated = max(0.0, memory.avail_before_load - 0.05)
            raise OutOfMemoryError(
                f"CUDA out of memory. Tried to allocate {min(weights - allocated, 2.0) * 1024:.2f} MiB. "
                f"GPU {self.tp_rank} has a total capacity of {memory.total:.2f} GiB of which "
                f"{(memory.avail_before_load - allocated) * 1024:.2f} MiB is free. Including non-PyTorch memory, "
                f"this process has {allocated + CUDA_CONTEXT_GIB:.2f} GiB memory in use. Of the allocated memory "
                f"{allocated:.2f} GiB is allocated by PyTorch, and 20.00 MiB is reserved by PyTorch but unallocated. "
                "If reserved but unallocated memory is large try setting "
                "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for "
                "Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
            )
        memory.weights = weights

    def init_memory_pool(self) -> None:
        args, facts, memory = self.server_args, self.facts, self.memory
        rest = memory.avail_after_load - memory.total * (1 - self.mem_fraction_static)
        if rest <= 0:
            raise RuntimeError("Not enough memory. Please try to increase --mem-fraction-static.")
        if facts.gdn_state_per_request_bytes:
            # Hybrid GDN models split the static budget between the mamba state pool and the KV pool.
            ratio = args.mamba_full_memory_ratio
            memory.mamba_size = rest * ratio / (1 + ratio)
            ssm_scale = 0.5 if args.mamba_ssm_dtype == "bfloat16" else 1.0
            per_request = facts.gdn_state_per_request_bytes * ssm_scale / args.tp_size
            memory.max_mamba_cache_size = int(memory.mamba_size * GIB / per_request)
        kv_budget = rest - memory.mamba_size
        dtype_bytes = 1 if args.kv_cache_dtype.startswith("fp8") else 2
        per_token = facts.kv_bytes_per_token(args.tp_size, dtype_bytes)
        tokens = int(kv_budget * GIB / per_token)
        if args.max_total_tokens:
            tokens = min(tokens, args.max_total_tokens)
        memory.kv_tokens = tokens
        memory.kv_size = tokens * per_token / GIB

    def init_cuda_graphs(self, cuda_graph_max_bs: int) -> None:
        if not self.server_args.disable_cuda_graph:
            self.memory.graph = min(0.25 + cuda_graph_max_bs * 0.01, max(0.0, self.memory.avail_after_pool - 0.1))
