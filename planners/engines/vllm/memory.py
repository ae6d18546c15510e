"""vLLM's memory model (engines/MEMORY_MODEL.md §3, vllm/v1/worker/gpu_worker.py determine_available_memory):
``--gpu-memory-utilization`` x GPU memory holds weights + profiled activation peak + runtime + KV; at start the GPU
must have that much free ("Free memory on device ... is less than desired GPU memory utilization")."""

from __future__ import annotations

import math

from bot.models import GIB

from ...compat import at_least
from ...fit import EngineState, PlanContext, Slot
from ...memory import MIB, gib, linear_note, linear_state_bytes, sliding_state_bytes
from ...model import ModelSpec
from ..base import BudgetSplit
from .speculative import num_speculative_tokens

#: vLLM's long-standing default (0.92 only in the newest code): set explicitly so the plan's figures hold.
DEFAULT_UTILIZATION = 0.90
#: Raised to at most this when the default leaves too little KV; above it graph capture tends to OOM.
MAX_UTILIZATION = 0.95


def num_spec_tokens(spec: ModelSpec) -> int:
    """One speculative token per MTP layer (the recipes' MTP-1 for one-layer heads); 1 when unknown."""
    return max(1, min(spec.mtp_layers or 1, 3))


def vllm_batch_defaults(gpu_total_bytes: int, gpu_name: str | None) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) vLLM serve picks: 8192/1024 on >= 70 GiB non-A100 GPUs, else 2048/256."""
    if gpu_total_bytes >= 70 * GIB and "a100" not in (gpu_name or "").lower():
        return 8192, 1024
    return 2048, 256


def vllm_overhead_bytes(spec: ModelSpec, tp: int, batched_tokens: int, max_num_seqs: int) -> int:
    """Inside vLLM's budget besides weights and KV: profiled activation peak + sampler logits + runtime + graphs.

    A rough model of what `determine_available_memory` measures: activations at max_num_batched_tokens, fp32 logits
    for max_num_seqs rows during the sampler dry run, cuBLAS/NCCL buffers, and the CUDA-graph pool.
    """
    h = spec.hidden_size
    ffn = spec.intermediate_size * 2 // tp
    if spec.is_moe and spec.experts_per_token:
        ffn = max(ffn, spec.experts_per_token * (spec.moe_intermediate_size or spec.intermediate_size) * 2 // tp)
    attention = (spec.num_attention_heads + 2 * spec.num_kv_heads) * spec.head_dim // tp
    activation = batched_tokens * (4 * h + 2 * ffn + attention) * 2
    logits = max_num_seqs * spec.vocab_size * 4 * 2
    runtime = 512 * MIB + (256 * MIB if tp > 1 else 0)
    graphs = 512 * MIB
    return activation + logits + runtime + graphs


def overhead(ctx: PlanContext, slot: Slot) -> int:
    batched, seqs = vllm_batch_defaults(slot.total, slot.gpu_name)
    return vllm_overhead_bytes(ctx.spec, slot.tp, batched, ctx.asked.max_running_requests or seqs)


def split_budget(fraction: float, total: int, free: int, weights: int, overhead_bytes: int | None) -> BudgetSplit:
    requested = int(fraction * total)
    used = overhead_bytes if overhead_bytes is not None else 0
    notes: tuple[str, ...] = ()
    if free < requested:
        notes = (f"vLLM needs {gib(requested)} free at start ({fraction:.2f} x {gib(total)}); only {gib(free)} is free",)
    return BudgetSplit(
        overhead=used, headroom=total - requested, pool=requested - weights - used, startup_ok=free >= requested,
        notes=notes,
    )


def state(ctx: PlanContext, slot: Slot, version: str | None) -> EngineState:
    """vLLM keeps GDN state (fp32 SSM, bf16 conv) in 1 + num_speculative blocks per request, and windows per request
    for sliding layers (its hybrid allocator, 0.10+)."""
    spec = ctx.spec
    sliding_aware = at_least(version, "0.10.0") is True
    per_request = 0
    note = None
    if spec.is_hybrid_linear:
        num_spec = num_spec_tokens(spec) if slot.mtp else 0
        if ctx.drafter is not None:
            num_spec = num_speculative_tokens(ctx.drafter)
        base = linear_state_bytes(spec, slot.tp, 4)
        per_request = base * (1 + num_spec)
        note = linear_note(spec, base) + (
            f", x{1 + num_spec} state blocks with {num_spec} speculative token(s)" if num_spec else ""
        )
    if sliding_aware and spec.sliding_attention_layers and spec.full_attention_layers:
        per_request += sliding_state_bytes(spec, slot.tp, slot.kv_dtype_bytes, spec.sliding_window or 0)
    return EngineState(per_request=per_request, note=note, sliding_aware=sliding_aware)


def fractions(ctx: PlanContext, slot: Slot) -> list[tuple[float, str]]:
    """vLLM's default (lowered to what is free on a shared GPU), then a raised one, each with its reason."""
    asked = ctx.asked
    if asked.mem_fraction is not None:
        return [(asked.mem_fraction, f"gpu-memory-utilization {asked.mem_fraction:.2f}, as asked.")]
    default = DEFAULT_UTILIZATION
    # vLLM refuses to start unless free memory covers utilization x total: keep 512 MiB of slack
    affordable = math.floor((slot.free - 512 * MIB) / slot.total * 100) / 100
    if affordable < default:
        return [
            (
                affordable,
                f"gpu-memory-utilization lowered from {default:.2f} to {affordable:.2f}: other processes hold "
                f"{gib(slot.total - slot.free)} of the GPU, and vLLM refuses to start when free memory is below "
                "utilization x total.",
            )
        ]
    options = [
        (
            default,
            f"gpu-memory-utilization {default:.2f}: vLLM's default, set explicitly so the plan's figures hold across "
            "versions (the newest default is 0.92).",
        )
    ]
    raised = min(MAX_UTILIZATION, affordable)
    if raised > default + 0.005:
        options.append(
            (
                raised,
                f"gpu-memory-utilization raised from {default:.2f} to {raised:.2f}: the default leaves too little KV "
                f"cache for the full context; {gib((1 - raised) * slot.total)} per GPU stays outside vLLM's budget.",
            )
        )
    return options
