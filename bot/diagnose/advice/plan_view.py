"""What is known of this launch (engine, plan, host) as the advice reads it: flags, numbers, shared GPUs,
the TP that would fit."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from bot.models import GIB, EngineName, GpuProcess, HostFacts, LaunchPlan
from planners.engines import registry
from planners import argv as planner_argv
from planners.engines.base import Engine
from planners.flags import EngineHelp


@lru_cache(maxsize=8)
def _parsed_help(engine: str, text: str) -> EngineHelp:
    return registry.get(engine).parse_help(text)

_ARGV_NAMES: dict[str, tuple[str, ...]] = {
    "mem_fraction": ("--mem-fraction-static", "--mem-fraction", "--gpu-memory-utilization"),
    "context": ("--context-length", "--max-model-len"),
    "graph_bs": ("--cuda-graph-max-bs", "--max-cudagraph-capture-size", "--max-seq-len-to-capture"),
    "tp": ("--tp", "--tp-size", "--tensor-parallel-size", "-tp"),
    "dtype": ("--dtype",),
    "quantization": ("--quantization", "-q"),
    "batched_tokens": ("--max-num-batched-tokens", "--chunked-prefill-size"),
}
PACKAGES = {"flash_attn": "flash-attn", "sgl_kernel": "sgl-kernel", "flashinfer": "flashinfer-python",
             "vllm": "vllm", "sglang": "sglang", "transformers": "transformers", "triton": "triton",
             "deep_gemm": "deep-gemm", "xformers": "xformers", "outlines": "outlines", "bitsandbytes": "bitsandbytes",
             "mooncake": "mooncake-transfer-engine"}


#: The class a Python exception line begins with ("ValueError: ", "pydantic_core._pydantic_core.ValidationError: ").
_EXCEPTION_PREFIX = re.compile(r"^(?:[\w.]{0,80}\.)?[A-Z]\w{0,40}(?:Error|Exception): ")


def exception_message(text: str, limit: int = 240) -> str:
    """An exception line's message without its class, for quoting a check's own words in advice."""
    return _EXCEPTION_PREFIX.sub("", text)[:limit]


def gib(value: float | int | None) -> str:
    return "?" if value is None else f"{value / GIB:.1f} GiB"


def argv_value_of(argv: list[str], names: Iterable[str]) -> str | None:
    """The value of the first of ``names`` in the launch argv (read by planners/argv.py, the one argv reader)."""
    return planner_argv.value_of(argv, names)


def as_float(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def as_int(value: str | None) -> int | None:
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
    #: The command line a person gave with a log (no plan): its flags are what "the plan passes" means then.
    command_argv: tuple[str, ...] = ()

    @property
    def engine_plugin(self) -> Engine | None:
        """The deployment's engine from the registry (planners/engines), None when unknown."""
        return registry.find(self.engine)

    def flag(self, name: str) -> str:
        """The engine's spelling of a neutral setting (``engine.flag``: this build's --help when the probe has it,
        else the installed release's spelling); every registered engine's when the engine is unknown."""
        engine = self.engine_plugin
        if engine is None:
            return " / ".join(f"{each.flag(name)} ({each.label})" for each in registry.engines())
        help_text = self.facts.engine_help.get(engine.name) if self.facts else None
        if help_text:
            return engine.flag(name, help_=_parsed_help(engine.name, help_text))
        version = self.plan.engine_version if self.plan and self.plan.engine_version else None
        return engine.flag(name, version=version)

    @property
    def argv(self) -> list[str]:
        return self.plan.argv if self.plan else list(self.command_argv)

    def has_flag(self, flag: str) -> bool:
        """Whether the launch argv gives ``flag``, as ``--flag value`` or ``--flag=value``."""
        return any(name == flag for _, name, _ in planner_argv.flags_in(self.argv))

    def argv_value(self, name: str) -> str | None:
        return argv_value_of(self.argv, _ARGV_NAMES[name])

    @property
    def tp(self) -> int | None:
        return self.plan.tp if self.plan else None

    @property
    def mem_fraction(self) -> float | None:
        if self.plan and self.plan.mem_fraction:
            return self.plan.mem_fraction
        return as_float(self.argv_value("mem_fraction"))

    @property
    def context_length(self) -> int | None:
        if self.plan and self.plan.context_length:
            return self.plan.context_length
        return as_int(self.argv_value("context"))

    @property
    def graph_bs(self) -> int | None:
        return as_int(self.argv_value("graph_bs"))

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
        card = f"the card has {gib(free)} free of {gib(total)}" if free is not None else f"the card has {gib(total)}"
        return f"weights need {gib(weights)} per GPU {where} and {card}"

    def shared_steps(self) -> list[str]:
        steps = []
        for proc in self.shared()[:3]:
            what = proc.name or (proc.cmdline or "")[:40] or "a process"
            used = f" holds {gib(proc.used_bytes)}" if proc.used_bytes else ""
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


def round_context(tokens: int) -> int:
    """A context length a person would type: a multiple of 1024 below ``tokens`` (or ``tokens`` when small)."""
    if tokens >= 2048:
        return tokens // 1024 * 1024
    return max(1, tokens)


def other_engine(s: PlanView) -> tuple[EngineName, str] | None:
    """The other engine, when the probe found it installed and importable on this host."""
    if not s.engine or not s.facts:
        return None
    for other in registry.names():
        install = s.facts.engines.get(other) if other != s.engine else None
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
