"""SGLang as a deploybot engine: its names, how it is found, its flags, its log dialect and crash rules."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.models import PlanFailure, Risk

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


class SGLang(EngineBase):
    name = "sglang"
    label = "SGLang"
    # "sgl" is how its own docs and CLI shorten it; "sg lang" / "sg-lang" as people type it
    aliases = ("sgl", "sg-lang")
    discovery = Discovery(
        package="sglang",
        module=flags.MODULE,
        help_args=("--help",),
        version_args=("--version",),
        cmdline_marks=("sglang.launch_server", "sglang serve"),
    )
    core_flags = flags.CORE_FLAGS
    # python/sglang/srt/server_args.py (add_cli_args) at the captured releases (bot/simhost/enginehelp/sglang-*)
    flag_names = {
        "model": "--model-path",
        "host": "--host",
        "port": "--port",
        "served_name": "--served-model-name",
        "tp": flags.TP_FLAGS[0],
        "mem_fraction": "--mem-fraction-static",
        "context": "--context-length",
        "max_running": "--max-running-requests",
        "graph_bs": "--cuda-graph-max-bs",
        "no_graph": "--disable-cuda-graph",
        "no_prefix_cache": "--disable-radix-cache",
        "batch_tokens": "--chunked-prefill-size",
        "kv_cache_dtype": "--kv-cache-dtype",
        "quantization": "--quantization",
        "trust_remote_code": "--trust-remote-code",
        "mamba_strategy": flags.MAMBA_STRATEGY_FLAG,
        "metrics": "--enable-metrics",
    }
    flag_alternatives = {"tp": flags.TP_FLAGS[1:], "model": ("--model",)}
    dialect = DIALECT
    crash_rules = RULES
    renames = tuple(RENAMES)
    support = SUPPORT
    name_rules = NAME_RULES
    #: Below this the planner's memory model (SGLang's mem-fraction heuristic of the PR #10975 era) may not hold.
    known_good = "0.5.0"
    issues_url = "github.com/sgl-project/sglang/issues"
    #: SGLang sizes its pool as if sliding-window layers were full attention (conservative)
    sliding_as_full = True

    # ------------------------------------------------------------------ memory model (memory.py)

    def state(self, ctx: PlanContext, slot: Slot, version: str | None) -> EngineState:
        return memory.state(ctx, slot)

    def fractions(self, ctx: PlanContext, slot: Slot) -> list[tuple[float, str]]:
        return memory.fractions(ctx, slot)

    def overhead(self, ctx: PlanContext, slot: Slot) -> int | None:
        return None  # SGLang keeps activations outside its static fraction: nothing inside besides weights + KV

    def draft_extra_bytes(self, spec: ModelSpec, tp: int) -> int:
        return memory.draft_extra_bytes(spec, tp)

    def split_budget(
        self, fraction: float, total: int, free: int, weights: int, draft: int, overhead: int | None
    ) -> BudgetSplit:
        return memory.split_budget(fraction, total, free, weights, draft)

    # ------------------------------------------------------------------ compatibility and argv

    def fp8_below_native(self, cc: tuple[int, int]) -> tuple[str, str]:
        return compat.fp8_below_native(cc)

    def build_argv(self, ctx: PlanContext, fit: Fit, inputs: ArgvInputs) -> list[str] | PlanFailure:
        return argv.build(ctx, fit, inputs)

    def drafter_problem(
        self, kind: str, version: str | None, help_: EngineHelp | None, extra_args: list[str]
    ) -> str | None:
        return speculative.support_problem(kind, help_, version) or speculative.layout_problem(kind, extra_args)

    def removal_risks(self, removed: list[str], mtp: bool) -> list[Risk]:
        if mtp and "--max-running-requests" in removed:
            return [
                Risk(
                    code="silent_rewrite",
                    message="without --max-running-requests SGLang resets it to 48 under speculative decoding",
                )
            ]
        return []


ENGINE = SGLang()
