"""vLLM launch lines: ``python -m vllm.entrypoints.openai.api_server`` (engines/LAUNCH_FLAGS.md §2).

MTP goes through ``--speculative-config '{"method": "mtp", "num_speculative_tokens": N}'`` (N >= 1; the method is
model-specific on releases before the generic name). The argv is a list, so the JSON needs no shell quoting here;
the launcher quotes it with shlex.join at the last moment.
"""

from __future__ import annotations

import json

from ...flags import EngineHelp

MODULE = "vllm.entrypoints.openai.api_server"
CORE_FLAGS = ("--model", "--tensor-parallel-size", "--port")


def speculative_config(method: str, num_tokens: int) -> str:
    if num_tokens < 1:
        raise ValueError("num_speculative_tokens must be >= 1 (vLLM validates gt=0)")
    return json.dumps({"method": method, "num_speculative_tokens": num_tokens})


def cuda_graph_args(help_: EngineHelp | None, max_bs: int) -> tuple[list[str], str | None]:
    """The flag that caps CUDA-graph batch sizes differs by release; only the help text can say which one."""
    if help_ is None:
        return [], (
            "CUDA-graph batch cap not set: the flag's name depends on the vLLM release and --help was not captured"
        )
    if help_.knows("--max-cudagraph-capture-size"):
        return ["--max-cudagraph-capture-size", str(max_bs)], None
    if help_.knows("--cuda-graph-sizes"):
        return ["--cuda-graph-sizes", str(max_bs)], None
    return [], "CUDA-graph batch cap not set: this vLLM lists no flag for it"


def build_argv(
    *,
    python: str,
    model_path: str,
    served_name: str,
    bind: str,
    port: int,
    tp: int,
    utilization: float,
    max_model_len: int,
    trust_remote_code: bool = False,
    speculative_config_json: str | None = None,
    max_num_seqs: int | None = None,
    enforce_eager: bool = False,
    cuda_graph: list[str] | None = None,
    kv_cache_dtype: str | None = None,
    quantization: str | None = None,
) -> list[str]:
    argv = [
        python,
        "-m",
        MODULE,
        "--model",
        model_path,
        "--served-model-name",
        served_name,
        "--host",
        bind,
        "--port",
        str(port),
        "--tensor-parallel-size",
        str(tp),
        "--gpu-memory-utilization",
        f"{utilization:.2f}",
        "--max-model-len",
        str(max_model_len),
    ]
    if trust_remote_code:
        argv.append("--trust-remote-code")
    if quantization:
        argv += ["--quantization", quantization]
    if kv_cache_dtype:
        argv += ["--kv-cache-dtype", kv_cache_dtype]
    if max_num_seqs is not None:
        argv += ["--max-num-seqs", str(max_num_seqs)]
    if enforce_eager:
        argv.append("--enforce-eager")
    else:
        argv += cuda_graph or []
    if speculative_config_json:
        argv += ["--speculative-config", speculative_config_json]
    return argv
