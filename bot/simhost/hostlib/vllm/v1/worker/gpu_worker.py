"""A GPU worker of the simulated vLLM: the startup memory check, weight loading and KV budget of
vllm/v1/worker/gpu_worker.py (MEMORY_MODEL.md §1), failing with vLLM's own messages."""

from __future__ import annotations

from simengine.errors import OutOfMemoryError
from simengine.modelinfo import GIB, ModelFacts

CUDA_CONTEXT_GIB = 0.5
NON_TORCH_GIB = 0.3  # NCCL, cuBLAS workspaces


class Worker:
    def __init__(self, rank: int, local_index: int, gpu: dict | None, free_gib: float, utilization: float) -> None:
        self.rank = rank
        self.local_index = local_index
        self.gpu = gpu
        self.free_gib = free_gib
        self.utilization = utilization
        self.weights_gib = 0.0
        self.kv_gib = 0.0
        self.graph_gib = 0.0

    @property
    def total_gib(self) -> float:
        assert self.gpu is not None
        return self.gpu["memory_total_mib"] / 1024

    @property
    def requested_gib(self) -> float:
        return self.total_gib * self.utilization

    def init_device(self) -> None:
        if self.gpu is None:
            raise RuntimeError(
                "CUDA error: invalid device ordinal\nCUDA kernel errors might be asynchronously reported at some other "
                "API call, so the stacktrace below might be incorrect.\nFor debugging consider passing "
                "CUDA_LAUNCH_BLOCKING=1\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
            )
        if self.free_gib < self.requested_gib:
            raise ValueError(
                f"Free memory on device cuda:{self.local_index} ({self.free_gib:.2f}/{self.total_gib:.2f} GiB) on "
                f"startup is less than desired GPU memory utilization ({self.utilization}, {self.requested_gib:.2f} "
                "GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes."
            )

    def load_model(self, facts: ModelFacts, tp: int, quantization: str | None, language_model_only: bool) -> None:
        weights = facts.checkpoint_bytes / tp / GIB
        if quantization == "fp8" and not facts.fp8_checkpoint:
            weights /= 2
        if language_model_only and facts.multimodal:
            weights *= 0.98  # the vision tower is a small share of these checkpoints
        available = self.free_gib - CUDA_CONTEXT_GIB
        if weights > available:
            allocated = max(0.0, available - 0.05)
            raise OutOfMemoryError(
                f"CUDA out of memory. Tried to allocate {min(weights - allocated, 2.0) * 1024:.2f} MiB. GPU "
                f"{self.local_index} has a total capacity of {self.total_gib:.2f} GiB of which "
                f"{(available - allocated) * 1024:.2f} MiB is free. Including non-PyTorch memory, this process has "
                f"{allocated + CUDA_CONTEXT_GIB:.2f} GiB memory in use. Of the allocated memory {allocated:.2f} GiB is "
                "allocated by PyTorch, and 10.00 MiB is reserved by PyTorch but unallocated. If reserved but "
                "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
                "fragmentation.  See documentation for Memory Management  "
                "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
            )
        self.weights_gib = weights

    def determine_available_memory(self, enforce_eager: bool, kv_cache_memory_bytes: int | None) -> float:
        if kv_cache_memory_bytes:
            self.kv_gib = kv_cache_memory_bytes / GIB
            return self.kv_gib
        activation_peak = 1.2 if self.total_gib < 70 else 2.5  # profile run at max_num_batched_tokens
        graphs = 0.0 if enforce_eager else 0.5
        available = self.requested_gib - self.weights_gib - activation_peak - NON_TORCH_GIB - graphs
        if available <= 0:
            raise ValueError(
                "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
                "initializing the engine."
            )
        self.kv_gib = available
        self.graph_gib = graphs
        return available

    @property
    def used_mib(self) -> int:
        return int((CUDA_CONTEXT_GIB + NON_TORCH_GIB + self.weights_gib + self.kv_gib + self.graph_gib) * 1024)
