"""SGLang's memory model (engines/MEMORY_MODEL.md §2, python/sglang/srt/server_args.py _handle_gpu_memory_settings):
``--mem-fraction-static`` x GPU memory holds weights + KV pool; the pool is what is left of the *free* memory after
loading weights minus the (1 - fraction) headroom, so memory other processes hold comes out of the pool."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from bot.models import GIB

from ...flags import parse_help
from ...fit import MIN_HYBRID_CONCURRENCY, EngineState, PlanContext, Slot
from ...memory import MIB, gib, linear_note, linear_state_bytes, ssm_state_bytes
from ...model import ModelSpec
from ..base import BudgetSplit
from . import flags

#: SGLang's memory fraction is raised at most to this (or its own pre-VLM value if higher): "Do not raise
#: --mem-fraction-static above 0.85" on small GPUs (engines/MEMORY_MODEL.md §2).
SGLANG_FRACTION_CEILING = 0.85

#: GPUs below this size get bf16 SSM state under MTP (the notes' advice for 48 GB cards).
SMALL_GPU_BYTES = 60 * GIB

#: SGLang's default ``--mamba-full-memory-ratio``: "The ratio of mamba state memory to full kv cache memory".
SGLANG_MAMBA_FULL_MEMORY_RATIO = 0.9


class SglangDefaults(BaseModel):
    """What SGLang's ``_handle_gpu_memory_settings`` would pick (MEMORY_MODEL.md §2)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    chunked_prefill_size: int
    cuda_graph_max_bs: int
    reserved_mib: float
    fraction_before_vlm: float
    vlm_factor: float
    fraction: float


def sglang_defaults(
    gpu_total_bytes: int,
    tp: int,
    *,
    speculative: bool,
    spec: ModelSpec,
    cuda_graph_max_bs: int | None = None,
    chunked_prefill_size: int | None = None,
    standalone: bool = False,
) -> SglangDefaults:
    gpu_mem = gpu_total_bytes / MIB
    if gpu_mem < 35 * 1024:  # "A10, 4090, 5090"
        chunk, graph_bs = 2048, (24 if tp < 4 else 80)
    elif gpu_mem < 60 * 1024:  # "A100 (40GB), L40" (RTX A6000 48 GB falls here)
        chunk, graph_bs = 4096, (32 if tp < 4 else 160)
    elif gpu_mem < 160 * 1024:  # "H100, A100", "H20, H200"
        chunk, graph_bs = 8192, (256 if tp < 4 else 512)
    else:  # "B200, MI300"
        chunk, graph_bs = 16384, 512
    chunk = chunked_prefill_size or chunk
    graph_bs = cuda_graph_max_bs or graph_bs
    reserved = 512 + max(chunk, 2048) * 1.5 + graph_bs * 2 + tp / 8 * 1024
    if gpu_mem > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    if speculative and standalone:
        reserved += 6 * 1024  # "standalonedraft model and cuda graphs" (server_args.py, 0.5.9 and 0.5.11)
    elif speculative:
        reserved += 2 * 1024  # "eagle draft models and cuda graphs"
    fraction = round((gpu_mem - reserved) / gpu_mem, 3)
    vlm_factor = 1.0
    if spec.vision is not None:
        # SGLang reads vision num_hidden_layers (24 when absent: Qwen-VL towers call it `depth`)
        vit_layers = spec.vision.layers if spec.vision.layers and spec.text_model_type != "qwen3_5_text" else 24
        complexity = vit_layers * spec.vision.hidden_size**2 / (24 * 1024**2)
        vlm_factor = 0.95 * min(1.05, max(0.8, 1.0 - 0.1 * (complexity - 1.0)))
    return SglangDefaults(
        chunked_prefill_size=chunk,
        cuda_graph_max_bs=graph_bs,
        reserved_mib=reserved,
        fraction_before_vlm=fraction,
        vlm_factor=round(vlm_factor, 4),
        fraction=round(fraction * vlm_factor, 3),
    )


def sglang_mamba_share(radix_cache: bool) -> float:
    """Share of the pool SGLang gives the mamba state of a hybrid model.

    With the radix cache on, the pool is split by the ratio (mamba : KV = 0.9 : 1); with it off, the mamba cache is
    sized from --max-running-requests instead (share 0: the per-request reservation applies).
    """
    if not radix_cache:
        return 0.0
    return SGLANG_MAMBA_FULL_MEMORY_RATIO / (1 + SGLANG_MAMBA_FULL_MEMORY_RATIO)


def draft_extra_bytes(spec: ModelSpec, tp: int) -> int:
    """Per-GPU memory an MTP drafter adds beyond the checkpoint's MTP layers.

    SGLang runs the MTP head as its own model runner and materialises an embedding + LM head for it
    (Qwen3.5-27B: "Qwen3_5ForCausalLMMTP mem usage=5.53 GB"). Models whose checkpoint stores the MTP module's own
    copies (DeepSeek-V3) already count them in the checkpoint.
    """
    if not spec.mtp_layers or spec.mtp_stores_embeddings:
        return 0
    embed_and_head = 2 * spec.vocab_size * spec.hidden_size * spec.dtype_bytes
    return embed_and_head // tp


def split_budget(fraction: float, total: int, free: int, weights: int, draft: int) -> BudgetSplit:
    static = int(fraction * total)
    used_by_others = max(0, total - free)
    # the pool is sized from free memory after loading: other processes' memory comes out of it
    return BudgetSplit(overhead=0, headroom=total - static, pool=static - weights - draft - used_by_others)


def state(ctx: PlanContext, slot: Slot) -> EngineState:
    """Hybrid models on SGLang: recurrent state per request, its dtype, and SGLang's mamba/KV split of the pool."""
    spec = ctx.spec
    if not spec.is_hybrid_linear:
        return EngineState()  # sliding-window layers: SGLang's pool is sized as if they were full (conservative)
    drafting = slot.mtp or ctx.drafter is not None
    small_mtp = drafting and slot.total < SMALL_GPU_BYTES
    config_bf16 = (spec.mamba_ssm_dtype or "float32").lower() in {"bfloat16", "bf16"}
    ssm_dtype = "bfloat16" if small_mtp or config_bf16 else None
    ssm_bytes = 2 if ssm_dtype else 4
    base = linear_state_bytes(spec, slot.tp, ssm_bytes)
    per_request = base
    note = linear_note(spec, base)
    if slot.mtp:
        # extra_buffer keeps two more state copies per request (ping-pong); verification keeps one SSM state per
        # draft token in the intermediate cache
        draft_tokens = flags.MTP_STEPS + 1
        per_request = 3 * base + draft_tokens * ssm_state_bytes(spec, slot.tp, ssm_bytes)
        note += f", {per_request / MIB:.0f} MiB with the extra_buffer copies and the MTP verification cache"
    elif ctx.drafter is not None:
        # any drafter on a hybrid model needs the rollback strategy too (SGLang 0.5.11 raises "Speculative decoding
        # for ... is not compatible with radix cache when using --mamba-scheduler-strategy no_buffer" for every
        # algorithm), and keeps one SSM state per verified token (a DFlash block is 16 where MTP's is 4)
        draft_tokens = ctx.drafter.draft_tokens
        per_request = 3 * base + draft_tokens * ssm_state_bytes(spec, slot.tp, ssm_bytes)
        note += (
            f", {per_request / MIB:.0f} MiB with the extra_buffer copies and the verification cache of "
            f"{draft_tokens} draft tokens"
        )
    if small_mtp:
        note += (
            f" (--mamba-ssm-dtype bfloat16 halves the SSM state: a GPU under {gib(SMALL_GPU_BYTES)} with MTP, "
            "as the notes advise)"
        )
    help_text = ctx.facts.engine_help.get("sglang")
    help_ = parse_help(help_text) if help_text else None
    mamba_args, _ = flags.mamba_strategy_args(help_)
    radix_off = drafting and mamba_args == ["--disable-radix-cache"]
    share = sglang_mamba_share(radix_cache=not radix_off)
    if share:
        note += (
            f"; SGLang gives the mamba state {share:.0%} of the pool "
            f"(--mamba-full-memory-ratio {SGLANG_MAMBA_FULL_MEMORY_RATIO}), KV the rest"
        )
    return EngineState(per_request=per_request, share=share, ssm_dtype=ssm_dtype, note=note)


def fractions(ctx: PlanContext, slot: Slot) -> list[tuple[float, str]]:
    """SGLang's own default first; then a raised one (up to the ceiling), each with its reason."""
    spec, asked = ctx.spec, ctx.asked
    if asked.mem_fraction is not None:
        return [(asked.mem_fraction, f"mem-fraction-static {asked.mem_fraction:.3g}, as asked.")]
    drafter = ctx.drafter
    defaults = sglang_defaults(
        slot.total,
        slot.tp,
        speculative=slot.mtp or drafter is not None,
        spec=spec,
        cuda_graph_max_bs=asked.cuda_graph_max_bs,
        standalone=drafter is not None and drafter.kind == "draft",
    )
    vlm = f", x{defaults.vlm_factor:.3f} for the vision tower" if defaults.vlm_factor != 1 else ""
    draft = ", the draft model" if slot.mtp or drafter is not None else ""
    options = [
        (
            defaults.fraction,
            f"mem-fraction-static {defaults.fraction:.3g}: SGLang's own default for a {gib(slot.total)} GPU at TP "
            f"{slot.tp} (reserves {defaults.reserved_mib:,.0f} MiB for prefill activations, CUDA graphs{draft}{vlm}); "
            "set explicitly so the plan's figures hold.",
        )
    ]
    ceiling = min(0.92, max(SGLANG_FRACTION_CEILING, defaults.fraction_before_vlm))
    if ceiling > defaults.fraction + 0.005:
        goal = "full context" + (f", {MIN_HYBRID_CONCURRENCY} concurrent requests" if spec.is_hybrid_linear else "")
        images = " (the default's multimodal cut assumes images; text traffic needs less)" if vlm else ""
        options.append(
            (
                ceiling,
                f"mem-fraction-static raised from SGLang's default {defaults.fraction:.3g} to {ceiling:.3g}: the "
                f"default leaves too little KV cache or per-request state for the goal ({goal}); "
                f"{gib((1 - ceiling) * slot.total)} per GPU stays outside for activations and CUDA graphs{images}.",
            )
        )
    return options
