"""A scratch third engine for the engine contract (tests/test_engine_contract.py): llama.cpp's ``llama-server``.

Tiny on purpose: it shows what adding an engine takes (this package plus one registry line), not a real llama.cpp
planner. Its flags, ready line and crash wording are llama.cpp's own (tools/server/README.md and common/arg.cpp of
ggml-org/llama.cpp); its memory model is a sketch (every layer offloaded, the KV cache sized by --ctx-size), and it
is handed a Hugging Face folder as its --model where the real server wants a GGUF file.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from bot.models import PlanFailure
from planners.engines.base import ArgvInputs, BudgetSplit, CrashRule, Discovery, EngineBase, LogDialect
from planners.fit import EngineState
from planners.flags import EngineHelp

if TYPE_CHECKING:
    from planners.fit import Fit, PlanContext, Slot
    from planners.model import ModelSpec

MIB = 1 << 20
#: llama.cpp keeps its compute buffers beside the weights and the KV cache ("CUDA0 compute buffer size").
COMPUTE_BUFFER = 512 * MIB

#: llama-server's help lists options as "-c,    --ctx-size N    description" (common/arg.cpp pads the names to
#: column 40): every name in that first column counts.
_OPTION_COLUMN = 40
_NAME = re.compile(r"(?<![\w-])--?[A-Za-z][A-Za-z0-9-]*")

DIALECT = LogDialect(
    fingerprint=re.compile(r"llama_model_loader: |load_tensors: |llama_kv_cache|main: server is listening"
                           r"|llama server listening|llama-server"),
    # tools/server/server.cpp: "main: server is listening on %s - starting the main loop"; before 2024 the JSON log
    # line "HTTP server listening" / "llama server listening"
    ready=(re.compile(r"server is listening on (?P<url>https?://\S+)"), re.compile(r"llama server listening")),
    # src/llama-model.cpp: "load_tensors: %10s model buffer size = %8.2f MiB"
    weights_loaded=(re.compile(r"load_tensors:\s+CUDA\d+ model buffer size =\s+(?P<mib>[\d.]+) MiB"),),
    # src/llama-kv-cache.cpp: "llama_kv_cache: size = %7.2f MiB (%6u cells, %3d layers, ...)"
    kv_allocated=(re.compile(r"llama_kv_cache\w*: size =\s+(?P<mib>[\d.]+) MiB \(\s*(?P<tokens>\d+) cells"),),
    launch_start=re.compile(r"^build: \d+ \("),
)

RULES = (
    # tools/server/server.cpp: LOG_ERR("%s: exiting due to model loading error\n") after "failed to load model"
    CrashRule("llamacpp_model_load", "model_files_missing_or_corrupt", re.compile(r"failed to load model", re.IGNORECASE),
              80, 0.85, "llama-server could not load the model file (not a GGUF file, or a truncated one)"),
)


class LlamaCpp(EngineBase):
    name = "llamacpp"
    label = "llama.cpp"
    aliases = ("llama.cpp", "llama-server", "llama-cpp")
    discovery = Discovery(binary="llama-server", version_args=("--version",), help_args=("--help",),
                          cmdline_marks=("llama-server",))
    core_flags = ("--model", "--port", "--ctx-size")
    flag_names = {
        "model": "--model", "host": "--host", "port": "--port", "served_name": "--alias",
        "tp": "--tensor-split",  # llama.cpp splits layers across GPUs by these proportions, not tensor parallel
        "mem_fraction": None, "context": "--ctx-size", "max_running": "--parallel", "graph_bs": None,
        "no_graph": None, "batch_tokens": "--batch-size", "kv_cache_dtype": "--cache-type-k", "quantization": None,
        "trust_remote_code": None, "gpu_layers": "--n-gpu-layers",
    }
    flag_alternatives = {"gpu_layers": ("--gpu-layers", "-ngl")}
    dialect = DIALECT
    crash_rules = RULES
    issues_url = "github.com/ggml-org/llama.cpp/issues"
    sliding_as_full = True

    def parse_help(self, text: str) -> EngineHelp:
        flags: set[str] = set()
        for line in text.splitlines():
            if line.startswith("-"):
                flags.update(_NAME.findall(line[:_OPTION_COLUMN]))
        return EngineHelp(flags=frozenset(flags), choices={})

    def state(self, ctx: PlanContext, slot: Slot, version: str | None) -> EngineState:
        return EngineState()

    def fractions(self, ctx: PlanContext, slot: Slot) -> list[tuple[float, str]]:
        return [(1.0, "llama.cpp has no memory fraction: every layer is offloaded and --ctx-size sizes the KV cache.")]

    def overhead(self, ctx: PlanContext, slot: Slot) -> int | None:
        return COMPUTE_BUFFER

    def draft_extra_bytes(self, spec: ModelSpec, tp: int) -> int:
        return 0

    def split_budget(
        self, fraction: float, total: int, free: int, weights: int, draft: int, overhead: int | None
    ) -> BudgetSplit:
        used = overhead or 0
        return BudgetSplit(overhead=used, headroom=0, pool=free - weights - draft - used)

    def fp8_below_native(self, cc: tuple[int, int]) -> tuple[str, str]:
        return "unsupported", "llama.cpp serves GGUF quantizations, not FP8 checkpoints"

    def build_argv(self, ctx: PlanContext, fit: Fit, inputs: ArgvInputs) -> list[str] | PlanFailure:
        argv = [*self.launcher(ctx.host.python), "--model", ctx.model_path, "--host", ctx.host.bind,
                "--port", str(ctx.port), "--alias", ctx.asked.model, "--ctx-size", str(inputs.context),
                "--n-gpu-layers", "999"]
        if fit.tp > 1:
            argv += ["--tensor-split", ",".join("1" for _ in fit.gpus)]
        inputs.reasons.append("llama.cpp: every layer on the GPUs (--n-gpu-layers 999), split evenly across them.")
        return argv


ENGINE = LlamaCpp()
