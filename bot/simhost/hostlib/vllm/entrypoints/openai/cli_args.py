"""The argument parser of the simulated vLLM server: the real release's options (captured by
tools/capture_engine_help.py; see simengine/argspec.py), with dashes or underscores as vLLM's
FlexibleArgumentParser accepts, and argparse's real errors for unknown flags and bad values."""

from __future__ import annotations

import argparse

import vllm
from simengine.argspec import add_captured_options, capture_dir, captured_parser, load_options


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
    add_captured_options(parser, load_options(capture_dir(vllm.__file__)))
    return parser


def make_arg_parser(prog: str | None = None) -> argparse.ArgumentParser:
    return captured_parser(capture_dir(vllm.__file__), prog=prog, description="vLLM OpenAI-Compatible RESTful API server.")


def non_default_args(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict:
    defaults = {action.dest: action.default for action in parser._actions}
    return {k: v for k, v in vars(args).items() if k in defaults and v != defaults[k] and k != "help"}
