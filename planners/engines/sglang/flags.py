"""SGLang launch lines: ``python -m sglang.launch_server`` with TP, memory fraction, context, MTP and hybrid flags.

Rules from engines/LAUNCH_FLAGS.md §1:
* the three speculative knobs are set all together or not at all (``assert`` otherwise), and with topk 1 the draft
  token count is rewritten to steps + 1, so the planner always writes exactly that;
* ``--max-running-requests`` is silently reset to 48 under speculative decoding unless it is given;
* hybrid Gated-DeltaNet models with MTP need a mamba state strategy that can roll back rejected drafts
  (``--mamba-scheduler-strategy extra_buffer``; newest builds spell it ``--mamba-radix-cache-strategy``;
  ``--disable-radix-cache`` is the fallback InferenceX uses).
"""

from __future__ import annotations

from ...compat import at_least
from ...flag_resolve import flag_for_version, successor
from ...flags import EngineHelp, flags_in

MODULE = "sglang.launch_server"
#: Flags every SGLang --help lists; a text without them is cut (e.g. only the usage of an error) and is not judged.
CORE_FLAGS = ("--model-path", "--port", "--mem-fraction-static")
#: SGLang has spelled TP as --tp-size with aliases --tp / --tensor-parallel-size (0.5.8 lists the latter first).
TP_FLAGS = ("--tp-size", "--tensor-parallel-size", "--tp")
#: SGLang's own auto choice for MTP heads ("else: return (3, 1, 4)"), also the Qwen3.6 cookbook's setting.
MTP_STEPS = 3
MTP_TOPK = 1
SPEC_KNOBS = ("--speculative-num-steps", "--speculative-eagle-topk", "--speculative-num-draft-tokens")


def speculative_algorithm(help_: EngineHelp | None, version: str | None) -> str:
    """EAGLE (NEXTN is its alias in every release that has both); NEXTN where the help lists only that."""
    choices = help_.choices.get("--speculative-algorithm") if help_ else None
    if choices:
        return "EAGLE" if "EAGLE" in choices else ("NEXTN" if "NEXTN" in choices else choices[0])
    return "EAGLE" if at_least(version, "0.4.0") is not False else "NEXTN"


def mtp_args(algorithm: str, steps: int = MTP_STEPS, topk: int = MTP_TOPK) -> list[str]:
    """The full set, never partial; draft tokens = steps + 1 at topk 1 (what SGLang would rewrite it to)."""
    draft = steps + 1 if topk == 1 else max(steps + 1, topk)
    return [
        "--speculative-algorithm",
        algorithm,
        "--speculative-num-steps",
        str(steps),
        "--speculative-eagle-topk",
        str(topk),
        "--speculative-num-draft-tokens",
        str(draft),
    ]


def tp_flag(help_: EngineHelp | None) -> str:
    """The TP spelling this build's --help lists (``--tp-size`` when unknown)."""
    if help_:
        return next((flag for flag in TP_FLAGS if help_.knows(flag)), TP_FLAGS[0])
    return TP_FLAGS[0]


MAMBA_STRATEGY_FLAG = "--mamba-scheduler-strategy"


def mamba_strategy_args(help_: EngineHelp | None, version: str | None = None) -> tuple[list[str], str]:
    """Flags that let MTP roll back a hybrid model's recurrent state, by what the installed build accepts.

    The build's help decides (the flag or its successor, with extra_buffer among its choices); without a help
    text, the name the captured releases use at this version. --disable-radix-cache only when the build has
    neither: it keeps MTP working but turns prefix caching off, a slower server than the engine allows."""
    if help_ is None:
        flag = flag_for_version("sglang", MAMBA_STRATEGY_FLAG, version)[0]
        return [flag, "extra_buffer"], f"{flag} extra_buffer (the name SGLang {version or '?'} uses; --help not captured)"
    candidates = [MAMBA_STRATEGY_FLAG, *successor("sglang", MAMBA_STRATEGY_FLAG, help_)[0]]
    for flag in candidates:
        if help_.knows(flag) and "extra_buffer" in help_.choices.get(flag, ("extra_buffer",)):
            return [flag, "extra_buffer"], f"{flag} extra_buffer (listed by this build's --help)"
    return ["--disable-radix-cache"], (
        "--disable-radix-cache: this build lists no mamba strategy flag with extra_buffer, so prefix caching is "
        "turned off instead (as InferenceX does)"
    )


def check_speculative_args(args: list[str]) -> tuple[list[str], list[str]]:
    """(problems, silent rewrites) in a set of SGLang args: partial knobs crash, topk-1 draft counts are rewritten."""
    values = {flag: value for _, flag, value in flags_in(args) if flag in SPEC_KNOBS}
    problems: list[str] = []
    rewrites: list[str] = []
    if not values:
        return problems, rewrites
    if "--speculative-num-steps" not in values:
        problems.append(
            "SGLang asserts when --speculative-eagle-topk / --speculative-num-draft-tokens are set without "
            "--speculative-num-steps: set all three or none"
        )
        return problems, rewrites
    try:
        steps = int(values["--speculative-num-steps"] or "")
        topk = int(values.get("--speculative-eagle-topk") or 1)
        draft = int(values.get("--speculative-num-draft-tokens") or steps + 1)
    except ValueError:
        return ["speculative knobs must be integers"], rewrites
    if steps < 1:
        problems.append(f"--speculative-num-steps {steps}: MTP needs at least 1 step")
    elif topk == 1 and draft != steps + 1:
        rewrites.append(
            f"SGLang rewrites --speculative-num-draft-tokens {draft} to {steps + 1} (steps + 1) when "
            "--speculative-eagle-topk is 1"
        )
    elif topk > 1 and draft < 2:
        problems.append(f"--speculative-num-draft-tokens {draft} with topk {topk} is unsupported (needs >= 2)")
    return problems, rewrites


def build_argv(
    *,
    python: str,
    model_path: str,
    served_name: str,
    bind: str,
    port: int,
    tp: int,
    tp_flag: str = TP_FLAGS[0],
    mem_fraction: float,
    context_length: int,
    trust_remote_code: bool = False,
    speculative: list[str] | None = None,
    max_running_requests: int | None = None,
    cuda_graph_max_bs: int | None = None,
    disable_cuda_graph: bool = False,
    kv_cache_dtype: str | None = None,
    quantization: str | None = None,
    mamba_ssm_dtype: str | None = None,
    mamba_args: list[str] | None = None,
    enable_metrics: bool = True,
) -> list[str]:
    argv = [
        python,
        "-m",
        MODULE,
        "--model-path",
        model_path,
        "--host",
        bind,
        "--port",
        str(port),
        tp_flag,
        str(tp),
        "--served-model-name",
        served_name,
        "--mem-fraction-static",
        f"{mem_fraction:.3f}".rstrip("0").rstrip("."),
        "--context-length",
        str(context_length),
    ]
    if trust_remote_code:
        argv.append("--trust-remote-code")
    if quantization:
        argv += ["--quantization", quantization]
    if kv_cache_dtype:
        argv += ["--kv-cache-dtype", kv_cache_dtype]
    if max_running_requests is not None:
        argv += ["--max-running-requests", str(max_running_requests)]
    if disable_cuda_graph:
        argv.append("--disable-cuda-graph")
    elif cuda_graph_max_bs is not None:
        argv += ["--cuda-graph-max-bs", str(cuda_graph_max_bs)]
    if mamba_ssm_dtype:
        argv += ["--mamba-ssm-dtype", mamba_ssm_dtype]
    argv += mamba_args or []
    argv += speculative or []
    if enable_metrics:
        # SGLang serves its Prometheus /metrics (running/queued requests, token usage, throughput) only with this
        # flag (python/sglang/srt/server_args.py); deploybot's `status` reads it.
        argv.append("--enable-metrics")
    return argv
