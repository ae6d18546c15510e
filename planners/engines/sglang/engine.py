"""SGLang as a deploybot engine: its names, how it is found, its flags, its log dialect and crash rules."""

from __future__ import annotations

from ..base import Discovery, EngineBase
from . import flags
from .crash_rules import RULES
from .logs import DIALECT
from .renames import RENAMES


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
        "batch_tokens": "--chunked-prefill-size",
        "kv_cache_dtype": "--kv-cache-dtype",
        "quantization": "--quantization",
        "trust_remote_code": "--trust-remote-code",
        "mamba_strategy": flags.MAMBA_STRATEGY_FLAG,
        "metrics": "--enable-metrics",
    }
    flag_alternatives = {"tp": flags.TP_FLAGS[1:]}
    dialect = DIALECT
    crash_rules = RULES
    renames = tuple(RENAMES)
    #: Below this the planner's memory model (SGLang's mem-fraction heuristic of the PR #10975 era) may not hold.
    known_good = "0.5.0"
    issues_url = "github.com/sgl-project/sglang/issues"


ENGINE = SGLang()
