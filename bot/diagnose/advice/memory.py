"""Advice for a GPU memory crash: the KV cache (too little, a busy GPU, the profiling
pass), CUDA-graph capture and the weights, with this plan's numbers."""

from __future__ import annotations

import math
import re

from bot.diagnose.advice.plan_view import PlanView, as_int, gib, round_context
from bot.diagnose.types import Advice, Finding
from bot.models import Fix, PlanOverrides


_KV_NEEDED = re.compile(r"max seq len \((\d+)\).*?\(([\d.]+) GiB KV cache is needed, which is larger than the "
                        r"available KV cache memory \(([\d.]+) GiB\)")


def advise_busy_gpu(f: Finding, s: PlanView) -> Advice:
    """vLLM found less free memory than its utilisation asks: other processes hold the GPU. The log says how much
    is free, which beats a plan made before the others came."""
    assert f.match is not None
    free_gib, total_gib = float(f.match.group(1)), float(f.match.group(2))
    # (the utilisation asked for is in the message unless it was wrapped before it; else the plan's, if known)
    asked = float(f.match.group(3)) if f.match.group(3) else s.mem_fraction
    flag_mf = s.flag("mem_fraction")
    target = math.floor((free_gib / total_gib - 0.02) * 100) / 100
    weights_gib = s.weights_per_gpu / 2**30 if s.weights_per_gpu is not None else None
    held = f"only {free_gib:.1f} of {total_gib:.1f} GiB is free (other processes hold {total_gib - free_gib:.1f} GiB)"
    if target < 0.3 or (weights_gib is not None and target * total_gib < weights_gib * 1.2):
        return ([f"{held}: too little for this model next to them; stop those processes (see `status`) or "
                 f"launch on other GPUs"], None)
    was = f" (was {asked:.2f})" if asked is not None else ""
    return ([f"{held}: relaunch with {flag_mf} {target:.2f}{was}, or stop the other processes first"],
            Fix(summary=f"{flag_mf} {f'{asked:.2f} -> ' if asked is not None else ''}{target:.2f} (fit in what the "
                        f"other processes leave free)", overrides=PlanOverrides(mem_fraction=target)))


def _smaller_context(f: Finding, s: PlanView) -> int | None:
    """A context length that fits: what the engine estimated, else half the plan's, else what the budget holds."""
    current, total, weights = s.mem_fraction, s.gpu_total, s.weights_per_gpu
    text = f.decisive.text if f.decisive else ""
    estimate = re.search(r"estimated maximum model length is (\d+)", text)
    estimated = int(estimate.group(1)) if estimate else None
    needed = _KV_NEEDED.search(text)
    if estimated is None and needed and float(needed.group(2)) > 0:
        # vLLM V1 says how much KV one full-length request needs and how much is left: scale the length down.
        estimated = int(int(needed.group(1)) * float(needed.group(3)) / float(needed.group(2)))
    if f.match is not None and f.rule == "kv_max_len" and f.match.group(2):  # (a message cut before its number)
        estimated = estimated or int(f.match.group(2))
    if estimated:
        return round_context(estimated)
    if s.context_length:
        return round_context(s.context_length // 2)
    if current and total and weights is not None and (per_token := s.kv_bytes_per_token_gpu):
        room = current * total - weights - s.overhead
        if room > 0:
            return round_context(int(room / per_token))
    return None


#: vLLM's sampler pass of the memory profile, which samples for max_num_seqs dummy requests at once
#: (v1/worker/gpu_model_runner.py _dummy_sampler_run).
_SAMPLER_WARMUP = re.compile(r"warming up (?:the )?sampler with (\d{1,7}) dummy requests")


def _kv_sampler(f: Finding, s: PlanView) -> Advice | None:
    """The profile's sampler pass for every sequence slot at once ran out: fewer slots (max_num_seqs), as vLLM says."""
    found = _SAMPLER_WARMUP.search(f.decisive.text if f.decisive else "")
    if found is None:
        return None
    slots = int(found.group(1))
    fewer = max(16, slots // 2)
    flag = s.flag("max_running")
    steps = [f"the memory profile sampled for {slots} sequences at once and ran out: relaunch with {flag} {fewer} "
             f"(fewer concurrent sequences), or a lower {s.flag('mem_fraction')} so more stays outside the KV pool"]
    fix = Fix(summary=f"{flag} {fewer} (fewer sequences in the sampler's warm-up)",
              overrides=PlanOverrides(extra_args=[flag, str(fewer)], remove_args=[flag] if s.has_flag(flag) else [])) \
        if s.engine_plugin is not None else None
    return steps, fix


def _kv_profile(f: Finding, s: PlanView, smaller_context: int | None) -> Advice:
    """The dummy forward pass at the largest batch ran out: fewer tokens per batch, not a different KV budget."""
    sampler = _kv_sampler(f, s)
    if sampler is not None:
        return sampler
    steps: list[str] = []
    fix: Fix | None = None
    memory = s.memory_sentence()
    flag_batch = s.flag("batch_tokens")
    batched = as_int(s.argv_value("batched_tokens"))
    fewer = max(512, batched // 2) if batched else 2048
    line = f"{memory}; " if memory else ""
    steps.append(f"{line}the profiling pass (one batch of the largest size) did not fit next to the weights: "
                 f"relaunch with {flag_batch} {fewer}" + (f" (now {batched})" if batched else ""))
    if smaller_context:
        steps.append(f"or shorten the context: {s.flag('context')} {smaller_context}")
    bigger = s.fitting_tp(larger_than=s.tp or 1)
    if bigger and s.plan:
        steps.append(f"or spread the weights over more GPUs: TP {bigger}")
    if s.engine_plugin is not None:
        fix = Fix(summary=f"{flag_batch} {fewer} (a smaller profiling batch)",
                  overrides=PlanOverrides(extra_args=[flag_batch, str(fewer)],
                                          remove_args=[flag_batch] if batched else []))
    return steps, fix


def _kv_lower(f: Finding, s: PlanView, smaller_context: int | None) -> Advice:
    """The KV pool (or serving's activations) did not fit: a lower memory fraction leaves headroom."""
    steps: list[str] = []
    fix: Fix | None = None
    flag_mf, flag_ctx = s.flag("mem_fraction"), s.flag("context")
    current, total, free, weights = s.mem_fraction, s.gpu_total, s.gpu_free, s.weights_per_gpu
    memory = s.memory_sentence()
    what = "the KV cache did not fit" if f.kind == "lower" else "serving ran out of activation memory"
    if current:
        target = current - 0.08
        if free is not None and total:
            target = min(target, free / total - 0.02)
        lowered = max(0.5, math.floor(round(target * 100, 6)) / 100)  # 0.88 - 0.08 is 0.80, never 0.79
        if weights is not None and total and weights > lowered * total * 0.9:
            steps.append((f"{memory}; " if memory else "") + f"lowering {flag_mf} below {current:.2f} would "
                         f"starve the KV cache: shorten the context or raise TP instead")
        else:
            line = f"{memory}; " if memory else ""
            line += f"{what} at {flag_mf} {current:.2f}: relaunch with {flag_mf} {lowered:.2f}"
            if smaller_context:
                line += f" or with {flag_ctx} {smaller_context}"
            steps.append(line)
            fix = Fix(summary=f"{flag_mf} {current:.2f} -> {lowered:.2f} (leave headroom outside the KV pool)",
                      overrides=PlanOverrides(mem_fraction=lowered))
    else:
        steps.append(f"{what}: lower {flag_mf} (e.g. 0.9 -> 0.8) so the KV pool leaves headroom for "
                     f"activations and CUDA graphs")
        if smaller_context:
            steps.append(f"or shorten the context: {flag_ctx} {smaller_context}")
    if fix is None and smaller_context and s.plan:
        fix = Fix(summary=f"{flag_ctx} {smaller_context}", overrides=PlanOverrides(context_length=smaller_context))
    return steps, fix


def _kv_context(f: Finding, s: PlanView, smaller_context: int | None) -> Advice:
    """One request at the full context length needs more KV cache than is left: a shorter context."""
    steps: list[str] = []
    fix: Fix | None = None
    flag_mf, flag_ctx, current, memory = s.flag("mem_fraction"), s.flag("context"), s.mem_fraction, s.memory_sentence()
    wanted = f.match.group(1) if f.match is not None and f.match.groups() else None
    if smaller_context:
        line = f"the full context ({wanted} tokens) does not fit in the KV cache left after the weights" \
            if wanted else "the full context does not fit in the KV cache"
        if memory:
            line = f"{memory}; {line}"
        steps.append(f"{line}: relaunch with {flag_ctx} {smaller_context}")
        fix = Fix(summary=f"{flag_ctx} {smaller_context} (what the KV cache holds)",
                  overrides=PlanOverrides(context_length=smaller_context))
    else:
        steps.append(f"shorten the context ({flag_ctx}) to what the KV cache holds")
    if current and current < 0.93:
        steps.append(f"or give the KV cache more memory: {flag_mf} {min(0.95, current + 0.05):.2f}")
    elif not current:
        steps.append(f"or raise {flag_mf} if nothing else uses the GPU")
    return steps, fix


def _kv_raise(s: PlanView, smaller_context: int | None) -> Advice:
    """The weights fill the budget and nothing is left for the KV cache: a larger fraction, more GPUs, less context."""
    steps: list[str] = []
    fix: Fix | None = None
    flag_mf, flag_ctx = s.flag("mem_fraction"), s.flag("context")
    current, total, free, memory = s.mem_fraction, s.gpu_total, s.gpu_free, s.memory_sentence()
    raised = round(min(0.95, current + 0.05), 2) if current and current < 0.93 else None
    if raised and free is not None and total and raised * total > free:
        steps.append(f"only {gib(free)} of {gib(total)} is free on the GPU, so {flag_mf} cannot go up: "
                     f"other processes hold the rest")
        raised = None
    budget = f"at {flag_mf} {current:.2f} the budget is {gib(current * total)} per GPU" \
        if current and total else None
    parts = [p for p in (memory, budget) if p]
    head = "; ".join(parts) + "; " if parts else ""
    if raised:
        steps.append(f"{head}the weights leave nothing for the KV cache: relaunch with {flag_mf} {raised:.2f}")
        fix = Fix(summary=f"{flag_mf} {current:.2f} -> {raised:.2f} (room for the KV cache)",
                  overrides=PlanOverrides(mem_fraction=raised))
    elif current:
        steps.append(f"{head}the weights leave nothing for the KV cache even at {flag_mf} {current:.2f}")
    else:
        steps.append(f"{head}the weights leave nothing for the KV cache: raise {flag_mf} (e.g. to 0.9); "
                     f"a very low value leaves no room at all")
    bigger = s.fitting_tp(larger_than=s.tp or 1)
    if bigger and s.plan:
        steps.append(f"or spread the weights over more GPUs: TP {bigger} "
                     f"({gib(s.plan.weights_bytes / bigger)} per GPU)")
        if fix is None:
            fix = Fix(summary=f"TP {s.tp} -> {bigger} (weights per GPU halve, room for the KV cache)",
                      overrides=PlanOverrides(tp=bigger))
    if smaller_context:
        steps.append(f"or shorten the context: {flag_ctx} {smaller_context}")
        if fix is None and s.plan:
            fix = Fix(summary=f"{flag_ctx} {smaller_context}",
                      overrides=PlanOverrides(context_length=smaller_context))
    return steps, fix


def advise_kv(f: Finding, s: PlanView) -> Advice:
    smaller_context = _smaller_context(f, s)
    if f.kind == "profile":
        steps, fix = _kv_profile(f, s, smaller_context)
    elif f.kind in ("lower", "runtime"):
        steps, fix = _kv_lower(f, s, smaller_context)
    elif f.kind == "context":
        steps, fix = _kv_context(f, s, smaller_context)
    else:
        steps, fix = _kv_raise(s, smaller_context)
    steps.extend(s.shared_steps())
    return steps, fix


def advise_graph(f: Finding, s: PlanView) -> Advice:
    flag_bs, flag_mf, flag_off = s.flag("graph_bs"), s.flag("mem_fraction"), s.flag("no_graph")
    if f.kind == "capture_crash":
        # Not memory: a kernel faulted inside the capture; without graphs the start shows whether capture is the cause.
        return ([f"a kernel crashed inside the CUDA graph capture: relaunch with {flag_off} to confirm the capture "
                 f"is the trigger; then try a piecewise / smaller capture ({flag_bs} 8) or another attention "
                 f"backend, and rerun with CUDA_LAUNCH_BLOCKING=1 (AMD_SERIALIZE_KERNEL=3 on ROCm) to name the kernel",
                 *s.shared_steps()],
                Fix(summary="no CUDA graphs (isolates the capture)", overrides=PlanOverrides(disable_cuda_graph=True)))
    current_bs = s.graph_bs
    smaller_bs = max(1, min(16, current_bs // 2)) if current_bs else 16
    steps = [f"capture CUDA graphs for fewer batch sizes: {flag_bs} {smaller_bs}"
             + (f" (now {current_bs})" if current_bs else "")]
    current = s.mem_fraction
    if current:
        steps.append(f"or leave more memory outside the static pool: {flag_mf} {current - 0.05:.2f} "
                     f"(now {current:.2f})")
    else:
        steps.append(f"or lower {flag_mf} (e.g. 0.8) to leave more room for the graphs")
    compile_on = "--enable-torch-compile" in s.argv
    if compile_on:
        steps.append("or drop --enable-torch-compile: compiled graphs need more memory and time to capture")
    steps.append(f"last resort: {flag_off} (no CUDA graphs, much slower decoding)")
    steps.extend(s.shared_steps())
    overrides = PlanOverrides(cuda_graph_max_bs=smaller_bs,
                              remove_args=["--enable-torch-compile"] if compile_on else [])
    return steps, Fix(summary=f"{flag_bs} {smaller_bs}" + (" and no torch.compile" if compile_on else ""),
                      overrides=overrides)


def advise_weights(f: Finding, s: PlanView) -> Advice:
    steps: list[str] = []
    fix: Fix | None = None
    text = f.decisive.text if f.decisive else ""
    if s.plan and s.tp:
        need, total, free = s.plan.weights_bytes / s.tp, s.gpu_total, s.gpu_free
        card = f"{gib(total)} ({gib(free)} free)" if free is not None else gib(total)
        steps.append(f"the weights need {gib(need)} per GPU at TP {s.tp}; the GPU has {card}")
        bigger = s.fitting_tp(larger_than=s.tp)
        if bigger:
            steps.append(f"relaunch at TP {bigger}: {gib(s.plan.weights_bytes / bigger)} of weights per GPU")
            fix = Fix(summary=f"TP {s.tp} -> {bigger} (the weights fit)", overrides=PlanOverrides(tp=bigger))
        elif s.host_gpu_count:
            count = s.host_gpu_count
            steps.append(f"even at TP {count} (all GPUs of {s.plan.host}) the weights need "
                         f"{gib(s.plan.weights_bytes / count)} per GPU: use a quantized checkpoint (FP8/AWQ/GPTQ) "
                         f"or a host with more GPU memory")
        if s.plan.speculative == "mtp":
            steps.append("MTP adds the draft layers' weights: without speculative decoding the model needs less")
        dtype = s.argv_value("dtype")
        if dtype in ("float", "float32"):
            steps.append(f"--dtype {dtype} doubles the weights compared with bfloat16/float16: drop it")
    else:
        numbers = re.search(r"total capac\w* of ([\d.]+ ?GiB) of which ([\d.]+ ?[MG]iB) is free", text)
        if numbers:
            steps.append(f"the GPU ({numbers.group(1)}) had {numbers.group(2)} free: the weights do not fit")
        steps.append(f"spread the weights over more GPUs ({s.flag('tp')}) or use a quantized checkpoint")
        steps.append("check --dtype: float32 doubles the weights compared with bfloat16")
        steps.append("check that no other process holds memory on the GPU (nvidia-smi)")
    steps.extend(s.shared_steps())
    return steps, fix
