"""vLLM as a deploybot engine: its names, how it is found, its flags, its log dialect and crash rules."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.models import PlanFailure

from ..base import ArgvInputs, BudgetSplit, Discovery, EngineBase
from . import argv, compat, flags, memory, speculative
from .crash_rules import RULES
from .logs import DIALECT
from .renames import RENAMES
from .support import NAME_RULES, SUPPORT

if TYPE_CHECKING:
    from ...fit import EngineState, Fit, PlanContext, Slot
    from ...flags import EngineHelp
    from ...model import ModelSpec


class VLLM(EngineBase):
    name = "vllm"
    label = "vLLM"
    aliases = ("v-llm",)  # a separator in an alias matches any of "-", "_", " "
    discovery = Discovery(
        package="vllm",
        module=flags.MODULE,
        help_args=("--help",),
        version_args=("--version",),
        cmdline_marks=("vllm.entrypoints", "vllm serve"),
    )
    core_flags = flags.CORE_FLAGS
    # vllm/engine/arg_utils.py and vllm/entrypoints/openai/cli_args.py at the captured releases
    # (bot/simhost/enginehelp/vllm-*)
    flag_names = {
        "model": "--model",
        "host": "--host",
        "port": "--port",
        "served_name": "--served-model-name",
        "tp": "--tensor-parallel-size",
        "mem_fraction": "--gpu-memory-utilization",
        "context": "--max-model-len",
        "max_running": "--max-num-seqs",
        "graph_bs": "--max-cudagraph-capture-size",
        "no_graph": "--enforce-eager",
        "no_prefix_cache": "--no-enable-prefix-caching",
        "batch_tokens": "--max-num-batched-tokens",
        "kv_cache_dtype": "--kv-cache-dtype",
        "quantization": "--quantization",
        "trust_remote_code": "--trust-remote-code",
        "speculative_config": "--speculative-config",
    }
    # (vLLM 0.33.0 spells the prefix-cache switch --enable-prefix-caching | --disable-prefix-caching, its --help)
    flag_alternatives = {"tp": ("-tp",), "graph_bs": ("--cuda-graph-sizes",),
                         "no_prefix_cache": ("--disable-prefix-caching",)}
    # the captures: 0.11.0 lists --cuda-graph-sizes, 0.17.0 and later --max-cudagraph-capture-size
    flag_history = {"graph_bs": (("0", "--cuda-graph-sizes"), ("0.17.0", "--max-cudagraph-capture-size"))}
    dialect = DIALECT
    crash_rules = RULES
    renames = tuple(RENAMES)
    support = SUPPORT
    name_rules = NAME_RULES
    #: Below this the planner's memory model (the V1 profiler and hybrid KV allocator) may not describe vLLM.
    known_good = "0.10.0"
    issues_url = "github.com/vllm-project/vllm/issues"
    #: vLLM's hybrid allocator keeps a window per request for sliding layers (0.10+; see memory.state)
    sliding_as_full = False

    # ------------------------------------------------------------------ memory model (memory.py)

    def state(self, ctx: PlanContext, slot: Slot, version: str | None) -> EngineState:
        return memory.state(ctx, slot, version)

    def fractions(self, ctx: PlanContext, slot: Slot) -> list[tuple[float, str]]:
        return memory.fractions(ctx, slot)

    def overhead(self, ctx: PlanContext, slot: Slot) -> int | None:
        return memory.overhead(ctx, slot)

    def draft_extra_bytes(self, spec: ModelSpec, tp: int) -> int:
        return 0  # vLLM's MTP drafter shares the target's embedding and LM head

    def split_budget(
        self, fraction: float, total: int, free: int, weights: int, draft: int, overhead: int | None
    ) -> BudgetSplit:
        return memory.split_budget(fraction, total, free, weights + draft, overhead)

    # ------------------------------------------------------------------ compatibility and argv

    def fp8_below_native(self, cc: tuple[int, int]) -> tuple[str, str]:
        return compat.fp8_below_native(cc)

    def build_argv(self, ctx: PlanContext, fit: Fit, inputs: ArgvInputs) -> list[str] | PlanFailure:
        return argv.build(ctx, fit, inputs)

    def drafter_problem(
        self, kind: str, version: str | None, help_: EngineHelp | None, extra_args: list[str]
    ) -> str | None:
        return speculative.support_problem(kind, version)


ENGINE = VLLM()
