"""vLLM's launch argv for a fit: MTP through --speculative-config, --max-num-seqs, the CUDA-graph cap
(LAUNCH_FLAGS.md §2)."""

from __future__ import annotations

from bot.models import PlanFailure

from ...compat import engine_label
from ...fit import STATE_SHARE_OF_POOL, Fit, PlanContext
from ..base import ArgvInputs
from . import flags
from . import speculative as drafter_config
from .compat import vllm_mtp_method
from .memory import num_spec_tokens


def build(ctx: PlanContext, fit: Fit, inputs: ArgvInputs) -> list[str] | PlanFailure:
    spec, asked, version = ctx.spec, ctx.asked, inputs.version
    spec_json = None
    if inputs.mtp:
        method = vllm_mtp_method(spec, version)
        n = num_spec_tokens(spec)
        spec_json = flags.speculative_config(method, n)
        inputs.reasons.append(
            f"MTP: --speculative-config {spec_json}: method {method!r} for {engine_label('vllm', version)}, "
            f"{n} speculative token(s) for {spec.mtp_layers or 'an unknown number of'} MTP layer(s) "
            "(the recipes' MTP-1: more tokens on a one-layer head lower the acceptance rate)."
        )
    elif ctx.drafter is not None:
        spec_json, why = drafter_config.speculative_config(ctx.drafter)
        inputs.reasons.append(why)
    if fit.state.note:
        inputs.reasons.append(
            fit.state.note + f"; --max-num-seqs {fit.concurrency} keeps the state within "
            f"{STATE_SHARE_OF_POOL:.0%} of the pool."
        )
    cuda_graph: list[str] = []
    if asked.cuda_graph_max_bs is not None and not asked.disable_cuda_graph:
        cuda_graph, note = flags.cuda_graph_args(inputs.help_, asked.cuda_graph_max_bs)
        if note:
            inputs.reasons.append(note + ".")
    return flags.build_argv(
        python=ctx.host.python,
        model_path=ctx.model_path,
        served_name=asked.model,
        bind=ctx.host.bind,
        port=ctx.port,
        tp=fit.tp,
        utilization=fit.fraction,
        max_model_len=inputs.context,
        trust_remote_code=inputs.trust_remote_code,
        speculative_config_json=spec_json,
        max_num_seqs=asked.max_running_requests or fit.concurrency,
        enforce_eager=asked.disable_cuda_graph,
        cuda_graph=cuda_graph,
        kv_cache_dtype=asked.kv_cache_dtype,
        quantization=inputs.quantization,
    )
