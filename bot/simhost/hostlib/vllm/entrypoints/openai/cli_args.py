"""The argument parser of the simulated vLLM server: the real flag names (dashes or underscores, as vLLM's
FlexibleArgumentParser accepts), and argparse's real errors for unknown flags and bad values."""

from __future__ import annotations

import argparse
import json
import re

KV_CACHE_DTYPES = ["auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla"]


def human_readable_int(value: str) -> int:
    """vLLM accepts 32k (x1000) and 32K (x1024) for lengths."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgG]?)", value.strip())
    if not match:
        raise argparse.ArgumentTypeError(f"Invalid format: {value!r}")
    number, suffix = float(match.group(1)), match.group(2)
    scale = {"": 1, "k": 1000, "m": 1000**2, "g": 1000**3, "K": 1024, "M": 1024**2, "G": 1024**3}[suffix]
    return int(number * scale)


def loads(value: str) -> object:
    return json.loads(value)


def normalize_underscores(argv: list[str]) -> list[str]:
    """--gpu_memory_utilization -> --gpu-memory-utilization, as FlexibleArgumentParser does."""
    result = []
    for arg in argv:
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            arg = name.replace("_", "-") + eq + value
        result.append(arg)
    return result


def add_server_args(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    a = parser.add_argument
    a("--model", type=str, default=None, help="Name or path of the Hugging Face model to use.")
    a("--served-model-name", type=str, nargs="+", default=None, help="The model name(s) used in the API.")
    a("--host", type=str, default=None, help="Host name.")
    a("--port", type=int, default=8000, help="Port number.")
    a("--tensor-parallel-size", "-tp", type=int, default=1, help="Number of tensor parallel groups.")
    a("--pipeline-parallel-size", "-pp", type=int, default=1, help="Number of pipeline parallel groups.")
    a("--data-parallel-size", "-dp", type=int, default=1, help="Number of data parallel groups.")
    a(
        "--gpu-memory-utilization",
        type=float,
        default=0.9,
        help="The fraction of GPU memory to be used for the model executor, which can range from 0 to 1.",
    )
    a("--kv-cache-memory-bytes", type=human_readable_int, default=None, help="Size of KV Cache per GPU in bytes.")
    a("--max-model-len", type=human_readable_int, default=None, help="Model context length (prompt and output).")
    a(
        "--max-num-seqs",
        type=int,
        default=None,
        help="Maximum number of sequences to be processed in a single iteration.",
    )
    a(
        "--max-num-batched-tokens",
        type=human_readable_int,
        default=None,
        help="Maximum number of tokens to be processed in a single iteration.",
    )
    a("--speculative-config", type=loads, default=None, help="The configurations for speculative decoding (JSON).")
    a(
        "--trust-remote-code",
        action="store_true",
        help="Trust remote code (e.g., from HuggingFace) when downloading the model and tokenizer.",
    )
    a("--quantization", "-q", type=str, default=None, help="Method used to quantize the weights.")
    a(
        "--dtype",
        type=str,
        default="auto",
        choices=["auto", "half", "float16", "bfloat16", "float", "float32"],
        help="Data type for model weights and activations.",
    )
    a("--kv-cache-dtype", type=str, default="auto", choices=KV_CACHE_DTYPES, help="Data type for kv cache storage.")
    a("--enforce-eager", action="store_true", help="Always use eager-mode PyTorch.")
    a(
        "--enable-prefix-caching",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="Whether to enable prefix caching.",
    )
    a(
        "--enable-chunked-prefill",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="Whether to enable chunked prefill.",
    )
    a("--language-model-only", action="store_true", help="Skip loading the vision encoder of a multimodal model.")
    a(
        "--mamba-cache-dtype",
        type=str,
        default="auto",
        choices=["auto", "float32", "float16", "bfloat16"],
        help="The data type to use for the Mamba cache.",
    )
    a(
        "--mamba-ssm-cache-dtype",
        type=str,
        default="auto",
        choices=["auto", "float32", "float16", "bfloat16"],
        help="The data type to use for the Mamba SSM state.",
    )
    a("--reasoning-parser", type=str, default=None, help="Select the reasoning parser depending on the model.")
    a("--tool-call-parser", type=str, default=None, help="Select the tool call parser depending on the model.")
    a("--enable-auto-tool-choice", action="store_true", help="Enable auto tool choice for supported models.")
    a("--chat-template", type=str, default=None, help="The file path to the chat template.")
    a("--tokenizer", type=str, default=None, help="Name or path of the Hugging Face tokenizer to use.")
    a("--tokenizer-mode", type=str, default="auto", help="Tokenizer mode.")
    a("--revision", type=str, default=None, help="The specific model version to use.")
    a("--download-dir", type=str, default=None, help="Directory to download and load the weights.")
    a("--load-format", type=str, default="auto", help="The format of the model weights to load.")
    a("--seed", type=int, default=0, help="Random seed for operations.")
    a("--swap-space", type=float, default=4, help="CPU swap space size (GiB) per GPU.")
    a("--disable-custom-all-reduce", action="store_true", help="Disable the custom all-reduce kernel.")
    a(
        "--distributed-executor-backend",
        type=str,
        default=None,
        choices=["mp", "ray", "uni", "external_launcher"],
        help="Backend to use for distributed model workers.",
    )
    a(
        "--api-key",
        type=str,
        default=None,
        help="If provided, the server will require this key to be presented in the header.",
    )
    a("--uvicorn-log-level", type=str, default="info", help="Log level for uvicorn.")
    a(
        "--limit-mm-per-prompt",
        type=loads,
        default=None,
        help="Maximum number of input items per modality per prompt (JSON).",
    )
    a("--hf-overrides", type=loads, default=None, help="Extra arguments for the HuggingFace config (JSON).")
    a("--generation-config", type=str, default="auto", help="The folder path to the generation config.")
    a("--async-scheduling", action="store_true", help="Perform async scheduling.")
    a("--compilation-config", "-O", type=str, default=None, help="torch.compile and cudagraph capture configuration.")
    return parser


def make_arg_parser(prog: str | None = None) -> argparse.ArgumentParser:
    return add_server_args(argparse.ArgumentParser(prog=prog, description="vLLM OpenAI-Compatible RESTful API server."))


def non_default_args(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict:
    defaults = {action.dest: action.default for action in parser._actions}
    return {k: v for k, v in vars(args).items() if k in defaults and v != defaults[k] and k != "help"}
