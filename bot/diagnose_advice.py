"""Next steps and the fix for a diagnosed crash, with this plan's numbers on this host.

The diagnoser (bot/diagnose.py) names the cause; this module says what to do about it. With a plan and host facts
the steps quote real numbers ("weights need 25.9 GiB per GPU at TP 2 and the card has 47.5 GiB free; the KV cache did
not fit at --mem-fraction-static 0.88: relaunch with 0.80") and, where the remedy is a plan change, the ``Fix`` carries
it as ``PlanOverrides`` for the planner to re-plan behind an approval. Without a plan the steps stay generic but
concrete; a fix is still given when its value does not depend on the plan (MTP off, fewer CUDA-graph batch sizes,
float16 on a GPU without bfloat16, no P2P).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bot.diagnose_advice_mtp import keep_mtp_for_radix_cache
from bot.models import GIB, EngineName, Fix, GpuProcess, HostFacts, LaunchPlan, PlanOverrides

if TYPE_CHECKING:
    from bot.diagnose_structure import TailStructure



@dataclass
class LogLine:
    """One line of the tail: where it is, what it says without prefixes, and whether it is traceback source code."""

    number: int  # 1-based line number within the tail as given
    raw: str
    text: str  # the message without prefixes
    level: str | None
    code: bool = False  # a source line quoted under a traceback frame, not a message


@dataclass
class Finding:
    """A cause found in the log: what it is, how sure, and the lines that show it."""

    category: str
    cause: str
    confidence: float
    kind: str | None = None
    decisive: LogLine | None = None
    match: re.Match[str] | None = None
    support: list[LogLine] = field(default_factory=list)
    rule: str | None = None
    pos: int = -1  # position of the decisive line in time order
    structure: TailStructure | None = None  # the tail's exceptions, exits and start-up phases (diagnose_structure)
    alternatives: list[str] = field(default_factory=list)  # other categories the evidence also supports


# --------------------------------------------------------------------------------------------- the plan and host


_FLAGS: dict[str, dict[str, str]] = {
    "sglang": {"mem_fraction": "--mem-fraction-static", "context": "--context-length", "tp": "--tp",
               "graph_bs": "--cuda-graph-max-bs", "no_graph": "--disable-cuda-graph", "port": "--port",
               "batch_tokens": "--chunked-prefill-size"},
    "vllm": {"mem_fraction": "--gpu-memory-utilization", "context": "--max-model-len",
             "tp": "--tensor-parallel-size", "graph_bs": "--max-cudagraph-capture-size",
             "no_graph": "--enforce-eager", "port": "--port", "batch_tokens": "--max-num-batched-tokens"},
}
_ARGV_NAMES: dict[str, tuple[str, ...]] = {
    "mem_fraction": ("--mem-fraction-static", "--mem-fraction", "--gpu-memory-utilization"),
    "context": ("--context-length", "--max-model-len"),
    "graph_bs": ("--cuda-graph-max-bs", "--max-cudagraph-capture-size", "--max-seq-len-to-capture"),
    "tp": ("--tp", "--tp-size", "--tensor-parallel-size", "-tp"),
    "dtype": ("--dtype",),
    "quantization": ("--quantization", "-q"),
    "batched_tokens": ("--max-num-batched-tokens", "--chunked-prefill-size"),
}
_PACKAGES = {"flash_attn": "flash-attn", "sgl_kernel": "sgl-kernel", "flashinfer": "flashinfer-python",
             "vllm": "vllm", "sglang": "sglang", "transformers": "transformers", "triton": "triton",
             "deep_gemm": "deep-gemm", "xformers": "xformers", "outlines": "outlines", "bitsandbytes": "bitsandbytes"}


def _gib(value: float | int | None) -> str:
    return "?" if value is None else f"{value / GIB:.1f} GiB"


def _argv_value(argv: list[str], names: Iterable[str]) -> str | None:
    wanted = {name.replace("_", "-") for name in names}
    for i, token in enumerate(argv):
        flag, _, inline = token.partition("=")
        if flag.replace("_", "-") in wanted:
            if inline:
                return inline
            if i + 1 < len(argv) and not argv[i + 1].startswith("-"):
                return argv[i + 1]
    return None


def _float(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


@dataclass
class PlanView:
    """What is known of this launch: engine, plan, host. Every number is None when unknown."""

    engine: str | None
    plan: LaunchPlan | None
    facts: HostFacts | None

    def flag(self, name: str) -> str:
        if self.engine in _FLAGS:
            return _FLAGS[self.engine][name]
        return f"{_FLAGS['sglang'][name]} (SGLang) / {_FLAGS['vllm'][name]} (vLLM)"

    @property
    def argv(self) -> list[str]:
        return self.plan.argv if self.plan else []

    def argv_value(self, name: str) -> str | None:
        return _argv_value(self.argv, _ARGV_NAMES[name])

    @property
    def tp(self) -> int | None:
        return self.plan.tp if self.plan else None

    @property
    def mem_fraction(self) -> float | None:
        if self.plan and self.plan.mem_fraction:
            return self.plan.mem_fraction
        return _float(self.argv_value("mem_fraction"))

    @property
    def context_length(self) -> int | None:
        if self.plan and self.plan.context_length:
            return self.plan.context_length
        return _int(self.argv_value("context"))

    @property
    def graph_bs(self) -> int | None:
        return _int(self.argv_value("graph_bs"))

    def _gpus(self) -> list[int]:
        return list(self.plan.gpus) if self.plan else []

    @property
    def weights_per_gpu(self) -> int | None:
        if not self.plan:
            return None
        if self.plan.per_gpu:
            return max(b.weights_bytes for b in self.plan.per_gpu)
        return self.plan.weights_bytes // max(1, self.plan.tp)

    @property
    def gpu_total(self) -> int | None:
        totals = [g.memory_total_bytes for i in self._gpus() if self.facts and (g := self.facts.gpu(i))]
        if not totals and self.plan and self.plan.per_gpu:
            totals = [b.total_bytes for b in self.plan.per_gpu]
        if not totals and self.facts and self.facts.gpus:
            totals = [g.memory_total_bytes for g in self.facts.gpus]
        return min(totals) if totals else None

    @property
    def gpu_free(self) -> int | None:
        free = [g.memory_free_bytes for i in self._gpus() if self.facts and (g := self.facts.gpu(i))]
        if not free and self.plan and self.plan.per_gpu:
            free = [b.free_bytes for b in self.plan.per_gpu]
        return min(free) if free else None

    @property
    def overhead(self) -> int:
        if self.plan and self.plan.per_gpu:
            return max(b.overhead_bytes for b in self.plan.per_gpu)
        return 0

    @property
    def kv_bytes_per_token_gpu(self) -> float | None:
        if self.plan and self.plan.per_gpu:
            budget = self.plan.per_gpu[0]
            if budget.kv_tokens > 0 and budget.kv_bytes > 0:
                return budget.kv_bytes / budget.kv_tokens
        if self.plan and self.plan.kv_bytes_per_token > 0:
            return self.plan.kv_bytes_per_token / max(1, self.plan.tp)  # approximation: KV heads split over TP
        return None

    @property
    def host_gpu_count(self) -> int | None:
        return len(self.facts.gpus) if self.facts and self.facts.gpus else None

    def model_config_value(self, *keys: str) -> int | None:
        config = self.facts.model.config if self.facts and self.facts.model and self.facts.model.config else None
        if not config:
            return None
        for scope in (config, config.get("text_config") or {}, config.get("llm_config") or {}):
            for key in keys:
                if isinstance(scope.get(key), int):
                    return scope[key]
        return None

    def shared(self) -> list[GpuProcess]:
        """Processes holding memory on this plan's GPUs (after a crash our own are gone)."""
        if not self.facts:
            return []
        seen: list[GpuProcess] = []
        for index in self._gpus():
            seen.extend(p for p in self.facts.processes_on(index) if p not in seen)
        return seen

    def memory_sentence(self) -> str | None:
        weights, total, free = self.weights_per_gpu, self.gpu_total, self.gpu_free
        if weights is None or total is None:
            return None
        where = f"at TP {self.tp}" if self.tp else "per GPU"
        card = f"the card has {_gib(free)} free of {_gib(total)}" if free is not None else f"the card has {_gib(total)}"
        return f"weights need {_gib(weights)} per GPU {where} and {card}"

    def shared_steps(self) -> list[str]:
        steps = []
        for proc in self.shared()[:3]:
            what = proc.name or (proc.cmdline or "")[:40] or "a process"
            used = f" holds {_gib(proc.used_bytes)}" if proc.used_bytes else ""
            steps.append(f"GPU {proc.gpu_index} is shared: PID {proc.pid} ({what}){used}; stop it or plan on other "
                         f"GPUs")
        return steps

    def fitting_tp(self, *, larger_than: int) -> int | None:
        """The smallest TP above ``larger_than`` that the host has GPUs for, divides the heads, and fits weights."""
        if not self.plan:
            return None
        count = self.host_gpu_count or 0
        total = self.gpu_total
        heads = self.model_config_value("num_attention_heads")
        budget = (self.mem_fraction or 0.9) * total * 0.9 if total else None
        candidate = 2
        while candidate <= max(count, 0):
            if candidate > larger_than and (heads is None or heads % candidate == 0) and (
                    budget is None or self.plan.weights_bytes / candidate <= budget):
                return candidate
            candidate *= 2
        return None


def _round_context(tokens: int) -> int:
    """A context length a person would type: a multiple of 1024 below ``tokens`` (or ``tokens`` when small)."""
    if tokens >= 2048:
        return tokens // 1024 * 1024
    return max(1, tokens)


# --------------------------------------------------------------------------------------------- advice per cause

Advice = tuple[list[str], Fix | None]


_KV_NEEDED = re.compile(r"max seq len \((\d+)\).*?\(([\d.]+) GiB KV cache is needed, which is larger than the "
                        r"available KV cache memory \(([\d.]+) GiB\)")


def _advise_busy_gpu(f: Finding, s: PlanView) -> Advice:
    """vLLM found less free memory than its utilisation asks: other processes hold the GPU. The log says how much
    is free, which beats a plan made before the others came."""
    assert f.match is not None
    free_gib, total_gib, asked = float(f.match.group(1)), float(f.match.group(2)), float(f.match.group(3))
    flag_mf = s.flag("mem_fraction")
    target = math.floor((free_gib / total_gib - 0.02) * 100) / 100
    weights_gib = s.weights_per_gpu / 2**30 if s.weights_per_gpu is not None else None
    held = f"only {free_gib:.1f} of {total_gib:.1f} GiB is free (other processes hold {total_gib - free_gib:.1f} GiB)"
    if target < 0.3 or (weights_gib is not None and target * total_gib < weights_gib * 1.2):
        return ([f"{held}: too little for this model next to them; stop those processes (see `status`) or "
                 f"launch on other GPUs"], None)
    return ([f"{held}: relaunch with {flag_mf} {target:.2f} (was {asked:.2f}), or stop the other processes first"],
            Fix(summary=f"{flag_mf} {asked:.2f} -> {target:.2f} (fit in what the other processes leave free)",
                overrides=PlanOverrides(mem_fraction=target)))


def _advise_kv(f: Finding, s: PlanView) -> Advice:
    steps: list[str] = []
    fix: Fix | None = None
    flag_mf, flag_ctx = s.flag("mem_fraction"), s.flag("context")
    current, total, free, weights = s.mem_fraction, s.gpu_total, s.gpu_free, s.weights_per_gpu
    if f.rule == "free_memory_startup" and f.match is not None:
        return _advise_busy_gpu(f, s)
    memory = s.memory_sentence()
    text = f.decisive.text if f.decisive else ""
    estimate = re.search(r"estimated maximum model length is (\d+)", text)
    estimated = int(estimate.group(1)) if estimate else None
    needed = _KV_NEEDED.search(text)
    if estimated is None and needed and float(needed.group(2)) > 0:
        # vLLM V1 says how much KV one full-length request needs and how much is left: scale the length down.
        estimated = int(int(needed.group(1)) * float(needed.group(3)) / float(needed.group(2)))
    if f.match is not None and f.rule == "kv_max_len":
        estimated = estimated or int(f.match.group(2))
    smaller_context = None
    if estimated:
        smaller_context = _round_context(estimated)
    elif s.context_length:
        smaller_context = _round_context(s.context_length // 2)
    elif current and total and weights is not None and (per_token := s.kv_bytes_per_token_gpu):
        room = current * total - weights - s.overhead
        if room > 0:
            smaller_context = _round_context(int(room / per_token))

    if f.kind == "profile":
        # The dummy forward pass at the largest batch ran out: fewer tokens per batch, not a different KV budget.
        flag_batch = s.flag("batch_tokens")
        batched = _int(s.argv_value("batched_tokens"))
        fewer = max(512, batched // 2) if batched else 2048
        line = f"{memory}; " if memory else ""
        steps.append(f"{line}the profiling pass (one batch of the largest size) did not fit next to the weights: "
                     f"relaunch with {flag_batch} {fewer}" + (f" (now {batched})" if batched else ""))
        if smaller_context:
            steps.append(f"or shorten the context: {flag_ctx} {smaller_context}")
        bigger = s.fitting_tp(larger_than=s.tp or 1)
        if bigger and s.plan:
            steps.append(f"or spread the weights over more GPUs: TP {bigger}")
        if s.engine in _FLAGS:
            fix = Fix(summary=f"{flag_batch} {fewer} (a smaller profiling batch)",
                      overrides=PlanOverrides(extra_args=[flag_batch, str(fewer)],
                                              remove_args=[flag_batch] if batched else []))
    elif f.kind in ("lower", "runtime"):
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
    elif f.kind == "context":
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
    else:  # "raise": the weights fill the budget and nothing is left for the KV cache
        raised = round(min(0.95, current + 0.05), 2) if current and current < 0.93 else None
        if raised and free is not None and total and raised * total > free:
            steps.append(f"only {_gib(free)} of {_gib(total)} is free on the GPU, so {flag_mf} cannot go up: "
                         f"other processes hold the rest")
            raised = None
        budget = f"at {flag_mf} {current:.2f} the budget is {_gib(current * total)} per GPU" \
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
                         f"({_gib(s.plan.weights_bytes / bigger)} per GPU)")
            if fix is None:
                fix = Fix(summary=f"TP {s.tp} -> {bigger} (weights per GPU halve, room for the KV cache)",
                          overrides=PlanOverrides(tp=bigger))
        if smaller_context:
            steps.append(f"or shorten the context: {flag_ctx} {smaller_context}")
            if fix is None and s.plan:
                fix = Fix(summary=f"{flag_ctx} {smaller_context}",
                          overrides=PlanOverrides(context_length=smaller_context))
    steps.extend(s.shared_steps())
    return steps, fix


def _advise_graph(f: Finding, s: PlanView) -> Advice:
    flag_bs, flag_mf, flag_off = s.flag("graph_bs"), s.flag("mem_fraction"), s.flag("no_graph")
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


def _advise_weights(f: Finding, s: PlanView) -> Advice:
    steps: list[str] = []
    fix: Fix | None = None
    text = f.decisive.text if f.decisive else ""
    if s.plan and s.tp:
        need, total, free = s.plan.weights_bytes / s.tp, s.gpu_total, s.gpu_free
        card = f"{_gib(total)} ({_gib(free)} free)" if free is not None else _gib(total)
        steps.append(f"the weights need {_gib(need)} per GPU at TP {s.tp}; the GPU has {card}")
        bigger = s.fitting_tp(larger_than=s.tp)
        if bigger:
            steps.append(f"relaunch at TP {bigger}: {_gib(s.plan.weights_bytes / bigger)} of weights per GPU")
            fix = Fix(summary=f"TP {s.tp} -> {bigger} (the weights fit)", overrides=PlanOverrides(tp=bigger))
        elif s.host_gpu_count:
            count = s.host_gpu_count
            steps.append(f"even at TP {count} (all GPUs of {s.plan.host}) the weights need "
                         f"{_gib(s.plan.weights_bytes / count)} per GPU: use a quantized checkpoint (FP8/AWQ/GPTQ) "
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


def _advise_tp(f: Finding, s: PlanView) -> Advice:
    text = f.decisive.text if f.decisive else ""
    count = s.host_gpu_count
    steps: list[str] = []
    fix: Fix | None = None
    if f.kind == "block":
        numbers = re.search(r"=\s*(\d+) is not divisible by weight quantization block_[nk]\s*=\s*(\d+)", text)
        tp = s.tp
        choice = None
        if numbers and tp:
            total, block = int(numbers.group(1)) * tp, int(numbers.group(2))
            choice = next((t for t in range(tp - 1, 0, -1) if total % t == 0 and (total // t) % block == 0), None)
        elif tp and tp > 1:
            choice = tp // 2
        if choice:
            steps.append(f"at TP {tp} the quantized weight slices are not whole blocks: relaunch at TP {choice}")
            fix = Fix(summary=f"TP {tp} -> {choice} (whole quantization blocks per GPU)",
                      overrides=PlanOverrides(tp=choice))
        else:
            steps.append("lower the TP until each GPU's weight slice is a whole number of quantization blocks")
        steps.append("(vLLM) or keep the TP and add --enable-expert-parallel so experts are not split")
        return steps, fix
    numbers = re.search(r"\((\d+)\) must be divisible by tensor parallel size \((\d+)\)|(\d+) is not divisible by "
                        r"(\d+)", text)
    dimension = divisor = None
    if numbers:
        values = [int(v) for v in numbers.groups() if v]
        dimension, divisor = values[0], values[1]
    tp = s.tp or divisor
    heads = s.model_config_value("num_attention_heads")
    kv_heads = s.model_config_value("num_key_value_heads")
    limit = count or tp or 8
    candidates = [t for t in range(1, max(limit, 1) + 1)
                  if (dimension is None or dimension % t == 0) and (heads is None or heads % t == 0)
                  and (kv_heads is None or kv_heads % t == 0 or t % kv_heads == 0)]
    fits = candidates
    if s.plan and s.gpu_total:
        budget = (s.mem_fraction or 0.9) * s.gpu_total * 0.9
        fits = [t for t in candidates if s.plan.weights_bytes / t <= budget] or candidates
    # Powers of two first: other dimensions (KV heads, vocab, experts) are almost always divisible by them.
    powers = [t for t in fits if t & (t - 1) == 0]
    pool = powers or fits
    below = [t for t in pool if tp is None or t < tp]
    above = [t for t in pool if tp is not None and t > tp]
    choice = max(below) if below else (min(above) if above else None)
    what = f"{dimension} is not divisible by {divisor}" if dimension else "a model dimension is not divisible by TP"
    if choice and choice != tp:
        usable = ", ".join(str(t) for t in fits)
        steps.append(f"{what}: relaunch at TP {choice} (TPs that divide it"
                     + (f" on {count} GPUs" if count else "") + f": {usable})")
        fix = Fix(summary=f"TP {tp} -> {choice} (divides the model's heads)", overrides=PlanOverrides(tp=choice))
    else:
        steps.append(f"{what}: choose a TP that divides the attention heads (and the vision heads of a VLM)")
    return steps, fix


def _advise_speculative(f: Finding, s: PlanView) -> Advice:
    text = f.decisive.text if f.decisive else ""
    kept = keep_mtp_for_radix_cache(text, s.plan, s.facts)  # the engine says how to keep MTP: do that
    if kept:
        return kept
    steps: list[str] = []
    if re.search(r"KeyError: '[^']*(?:mtp|nextn|eagle|draft)", text, re.IGNORECASE):
        steps.append("the checkpoint has no MTP/draft weights this engine version can load (a fine-tune that "
                     "dropped them, or a loader bug in this version)")
    if "num_speculative_tokens" in text or "n_predict" in text:
        steps.append("lower num_speculative_tokens to what the drafter supports (its n_predict / "
                     "num_nextn_predict_layers)")
    if re.search(r"eagle3? is only supported for", text, re.IGNORECASE):
        steps.append("EAGLE-3 does not support this model family: use the model's own MTP heads if it has them")
    full_set = ("--speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 1 "
                "--speculative-num-draft-tokens 4" if s.engine == "sglang"
                else "--speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 1}'"
                if s.engine == "vllm" else "the full set of speculative flags the engine documents")
    steps.append(f"relaunch without speculative decoding (the fix), or give the complete set: {full_set}")
    version = s.plan.engine_version if s.plan else None
    if version:
        steps.append(f"{s.engine} {version} may predate MTP support for this model: check a newer release")
    return steps, Fix(summary="relaunch without speculative decoding (MTP off)",
                      overrides=PlanOverrides(speculative="none"))


def _advise_bad_argument(f: Finding, s: PlanView) -> Advice:
    text = f.decisive.text if f.decisive else ""
    steps: list[str] = []
    fix: Fix | None = None
    if f.kind == "quantization_arg" and f.match is not None:
        steps.append(f"the checkpoint is {f.match.group(1)}-quantized: drop --quantization {f.match.group(2)} "
                     f"and let the engine read it from the config")
        return steps, Fix(summary="drop --quantization", overrides=PlanOverrides(remove_args=["--quantization"]))
    unknown = re.search(r"unrecognized arguments?: (.+)", text)
    if unknown:
        flags = [token for token in unknown.group(1).split() if token.startswith("-")]
        given = {token.split("=", 1)[0] for token in s.argv}
        remove: list[str] = []
        extra: list[str] = []
        for flag in flags:
            name = flag.split("=", 1)[0]
            hyphenated = name.replace("_", "-")
            if hyphenated != name:
                steps.append(f"{name} is spelled with underscores: the engine expects {hyphenated}")
                value = _argv_value(s.argv, [name])
                if name in given:
                    remove.append(name)
                    extra.extend([hyphenated] + ([value] if value else []))
            else:
                steps.append(f"{name} is not an option of this {s.engine or 'engine'} version"
                             + (f" ({s.plan.engine_version})" if s.plan and s.plan.engine_version else "")
                             + ": drop it or upgrade the engine")
                if name in given:
                    remove.append(name)
        if remove:
            fix = Fix(summary="fix the unknown flag(s): " + ", ".join(remove),
                      overrides=PlanOverrides(remove_args=remove, extra_args=extra))
    elif f.match is not None and f.rule == "argparse_invalid":
        steps.append(f"{f.match.group(1)}: {f.match.group(2)}")
    else:
        steps.append(f"the arguments were refused: {f.cause}")
    helper = {"sglang": "python -m sglang.launch_server --help", "vllm": "vllm serve --help=all"}.get(s.engine or "")
    steps.append(f"`{helper}` on the host lists the options this version accepts" if helper else
                 "the engine's --help on the host lists the options this version accepts")
    return steps, fix


def _advise_hub(f: Finding, s: PlanView) -> Advice:
    steps: list[str] = []
    if f.kind == "gated":
        steps.append("the model is gated on the Hub: download it once with an authorised token into the host's "
                     "models folder (deploybot serves local folders)")
    path = s.plan.model_path if s.plan else None
    if path and not path.startswith("/"):
        steps.append(f"the model path '{path}' is not a local folder, so the engine went to the Hub: use the "
                     f"folder's absolute path")
    elif path:
        steps.append(f"launch from the local folder {path} with HF_HUB_OFFLINE=1 so the engine never calls the Hub "
                     f"(the tokenizer or a remote-code file may still have pointed at a repo id)")
    else:
        steps.append("pass the local model folder (absolute path) and set HF_HUB_OFFLINE=1; the host has no "
                     "(allowed) route to huggingface.co")
    fix = Fix(summary="HF_HUB_OFFLINE=1 (use the local files only)",
              overrides=PlanOverrides(env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})) if s.plan else None
    return steps, fix


def _advise_files(f: Finding, s: PlanView) -> Advice:
    text = f.decisive.text if f.decisive else ""
    steps: list[str] = []
    model = s.facts.model if s.facts else None
    path = model.path if model else (s.plan.model_path if s.plan else None)
    if "HeaderTooLarge" in text:
        steps.append("a .safetensors file is not a real shard (typically a git-lfs pointer of a few hundred "
                     "bytes): fetch the real files (`git lfs pull`) or download again")
    elif re.search(r"MetadataIncompleteBuffer|incomplete metadata|unexpected EOF|failed reading zip", text):
        steps.append("a shard is truncated (an interrupted download or copy): download it again and compare "
                     "checksums with the source")
    if f.kind == "path" or not steps:
        where = path or "the model folder"
        steps.append(f"check that {where} exists on the host and holds config.json and every shard")
    if model is not None:
        if not model.exists:
            steps.append(f"{model.path} does not exist on {s.facts.host if s.facts else 'the host'}")
        elif model.index_total_size and model.shard_bytes and model.shard_bytes < model.index_total_size:
            steps.append(f"the shards hold {_gib(model.shard_bytes)} but the index expects "
                         f"{_gib(model.index_total_size)}: a shard is missing or short")
    return steps, None


def _advise_dependency(f: Finding, s: PlanView) -> Advice:
    text = f.decisive.text if f.decisive else ""
    python = "the engine's python"
    steps: list[str] = []
    module = re.search(r"No module named '([\w.]+)'", text)
    if module:
        top = module.group(1).split(".")[0]
        package = _PACKAGES.get(top, top.replace("_", "-"))
        steps.append(f"install {package} into the environment the engine runs in: {python} -m pip install {package}")
        if top in ("vllm", "sglang"):
            steps.append(f"{top} itself is missing: the launch used a different Python (venv/conda) than the one "
                         f"that has it")
    elif "undefined symbol" in text or f.kind == "binary":
        library = re.search(r"(lib[\w.+-]+\.so[\w.]*)|/([\w.-]+\.so)", text)
        name = next((g for g in library.groups() if g), "a compiled extension") if library else "a compiled extension"
        if "libcudart" in text or "libcuda" in text:
            steps.append(f"{name} is missing: the wheel was built for another CUDA runtime than the host has; install "
                         f"the matching runtime or the engine build for the host's CUDA")
        else:
            steps.append(f"{name} was built against another torch/CUDA than the one installed: reinstall the engine "
                         f"so its compiled packages match the installed torch")
    else:
        steps.append(f"an import failed ({f.cause}): install or upgrade the named package in the engine's environment")
    installed = s.facts.engines.get(s.engine) if s.facts and s.engine else None
    if installed and installed.error:
        steps.append(f"the probe saw the same problem importing {s.engine}: {installed.error[:120]}")
    return steps, None


def _advise_transformers(f: Finding, s: PlanView) -> Advice:
    model_type = f.match.group(1) if f.match is not None and f.match.groups() else "this model type"
    return ([f"upgrade transformers in the engine's environment to a release that knows '{model_type}' "
             f"(pip install -U transformers)",
             "if the engine pins an older transformers, upgrade the engine to a release that supports the model"],
            None)


def other_engine(s: PlanView) -> tuple[EngineName, str] | None:
    """The other engine, when the probe found it installed and importable on this host."""
    if not s.engine or not s.facts:
        return None
    other: EngineName = "vllm" if s.engine == "sglang" else "sglang"
    install = s.facts.engines.get(other)
    if install and install.version and not install.error:
        return other, install.version
    return None


def gpu_words(s: PlanView) -> str | None:
    gpus = [s.facts.gpu(i) for i in (s.plan.gpus if s.plan else [])] if s.facts else []
    gpu = next((g for g in gpus if g), None) or (s.facts.gpus[0] if s.facts and s.facts.gpus else None)
    if gpu is None:
        return None
    capability = f" (compute capability {gpu.compute_capability})" if gpu.compute_capability else ""
    return f"{gpu.name}{capability}"


def _advise_cuda(f: Finding, s: PlanView) -> Advice:
    gpu = gpu_words(s)
    steps: list[str] = []
    fix: Fix | None = None
    if f.kind == "driver":
        driver = f"driver {s.facts.driver_version} (CUDA {s.facts.cuda_version})" \
            if s.facts and s.facts.driver_version else "the host's driver"
        steps.append(f"{driver} is older than the CUDA the engine's torch needs: upgrade the NVIDIA driver, or "
                     f"install an engine/torch build for the driver's CUDA version")
    elif f.kind == "bf16":
        steps.append(f"{gpu or 'this GPU'} has no bfloat16: run in float16 (--dtype float16)")
        fix = Fix(summary="--dtype float16 (no bfloat16 on this GPU)",
                  overrides=PlanOverrides(extra_args=["--dtype", "float16"]))
    elif f.kind == "capability":
        steps.append(f"{f.cause}: on {gpu or 'this GPU'} do not use this feature (e.g. FP8 needs compute "
                     f"capability 8.9+): a bf16/fp16 or AWQ/GPTQ checkpoint, or a newer GPU")
    else:
        steps.append(f"the installed engine/torch has no compiled kernels for {gpu or 'this GPU'}: install a build "
                     f"that includes this architecture (newer GPUs need a torch built for CUDA 12.8+)")
        steps.append("a kernel JIT-compiled elsewhere (a copied cache) can cause the same: clear the JIT caches "
                     "(~/.cache/flashinfer, ~/.triton) and relaunch")
    return steps, fix


def _advise_quantization(f: Finding, s: PlanView) -> Advice:
    gpu = gpu_words(s)
    if f.kind == "dtype":
        dtype = f.match.group(1) if f.match is not None else "this dtype"
        return ([f"{dtype} does not work with these quantization kernels: run in float16 (--dtype float16)"],
                Fix(summary="--dtype float16 (what the quantized kernels support)",
                    overrides=PlanOverrides(extra_args=["--dtype", "float16"])))
    if f.kind == "unknown":
        return ([f"{s.engine or 'the engine'} {s.plan.engine_version if s.plan and s.plan.engine_version else ''} "
                 f"does not know this quantization method: upgrade the engine or use a checkpoint in a format it "
                 f"supports".replace("  ", " ")], None)
    return ([f"{gpu or 'this GPU'} cannot run this quantization: use a checkpoint in another format (bf16/fp16, or "
             f"AWQ/GPTQ on older GPUs), or a GPU that supports it"], None)


def _p2p_broken(s: PlanView) -> bool:
    if not s.facts or not s.facts.p2p:
        return False
    gpus = set(s.plan.gpus) if s.plan else None
    for pair, state in s.facts.p2p.items():
        ends = {int(x) for x in re.findall(r"\d+", pair)}
        if (gpus is None or ends <= gpus) and state.lower() not in ("ok", "supported", "yes"):
            return True
    return False


def _advise_nccl(f: Finding, s: PlanView) -> Advice:
    steps: list[str] = []
    p2p_fix = Fix(summary="NCCL_P2P_DISABLE=1 and --disable-custom-all-reduce (these GPUs have no P2P)",
                  overrides=PlanOverrides(env={"NCCL_P2P_DISABLE": "1"}, extra_args=["--disable-custom-all-reduce"]))
    if f.kind == "p2p" or _p2p_broken(s):
        steps.append("these GPUs cannot reach each other's memory (consumer cards / PCIe without P2P): disable P2P "
                     "and the custom all-reduce")
        return steps, p2p_fix
    if f.kind == "shm":
        steps.append("NCCL needs /dev/shm: in a container run with --ipc=host or a larger --shm-size (e.g. 16g); "
                     "check `df -h /dev/shm` on the host")
    elif f.kind == "timeout":
        steps.append("a collective timed out: one rank stalled or died first and the others waited; that rank's own "
                     "error (an OOM, an exception, a kill) is the cause. Relaunch with NCCL_DEBUG=INFO and "
                     "TORCH_NCCL_ASYNC_ERROR_HANDLING=1 to have it named; on several nodes check the network between "
                     "them (NCCL_SOCKET_IFNAME)")
    else:
        steps.append("rerun with NCCL_DEBUG=INFO to see the failing call; the usual causes: /dev/shm too small in a "
                     "container (--ipc=host), GPUs without P2P (NCCL_P2P_DISABLE=1), several network interfaces "
                     "(NCCL_SOCKET_IFNAME)")
    return steps, None


def _advise_host_oom(f: Finding, s: PlanView) -> Advice:
    steps = ["check the host's kernel log: `dmesg -T | grep -i -E 'killed process|out of memory'`"]
    if s.facts and s.facts.ram_total_bytes:
        available = f", {_gib(s.facts.ram_available_bytes)} available now" if s.facts.ram_available_bytes else ""
        steps.append(f"{s.facts.host} has {_gib(s.facts.ram_total_bytes)} of RAM{available}")
    if s.plan and s.tp and s.tp > 1:
        steps.append(f"with TP {s.tp}, {s.tp} workers read the {_gib(s.plan.weights_bytes)} checkpoint through RAM "
                     f"at once: free RAM, add swap, or stop other memory-heavy jobs before relaunching")
    else:
        steps.append("weights pass through RAM while loading: free RAM or add swap before relaunching")
    if f.kind == "bare_kill":
        steps.append("if dmesg shows no OOM kill, something else sent SIGKILL (a container memory limit, a "
                     "supervisor or timeout)")
    return steps, None


def category_advice(f: Finding, s: PlanView, lines: list[LogLine]) -> Advice:
    """Steps and fix for the categories this module advises on (bot/diagnose_advise.py routes the others)."""
    advisors: dict[str, Callable[[], Advice]] = {
        "kv_cache_insufficient": lambda: _advise_kv(f, s),
        "cuda_graph_oom": lambda: _advise_graph(f, s),
        "gpu_oom_weights": lambda: _advise_weights(f, s),
        "tp_not_divisible": lambda: _advise_tp(f, s),
        "speculative_config_invalid": lambda: _advise_speculative(f, s),
        "bad_argument": lambda: _advise_bad_argument(f, s),
        "hub_access": lambda: _advise_hub(f, s),
        "model_files_missing_or_corrupt": lambda: _advise_files(f, s),
        "missing_dependency": lambda: _advise_dependency(f, s),
        "transformers_too_old": lambda: _advise_transformers(f, s),
        "cuda_arch_or_driver": lambda: _advise_cuda(f, s),
        "quantization_unsupported": lambda: _advise_quantization(f, s),
        "nccl_error": lambda: _advise_nccl(f, s),
        "host_oom_killed": lambda: _advise_host_oom(f, s),
    }
    advisor = advisors.get(f.category)
    return advisor() if advisor else ([], None)
