"""The `vllm` command of the simulated vLLM: `vllm serve MODEL [options]` and `vllm --version`."""

from __future__ import annotations

import argparse
import sys

from vllm.entrypoints.openai.api_server import run_server
from vllm.entrypoints.openai.cli_args import add_server_args, normalize_underscores
from vllm.version import __version__


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="vllm", description="vLLM CLI")
    parser.add_argument("-v", "--version", action="version", version=__version__)
    commands = parser.add_subparsers(dest="subparser", required=True)
    serve = commands.add_parser(
        "serve", help="Start the vLLM OpenAI Compatible API server.", usage="vllm serve [model_tag] [options]"
    )
    serve.add_argument(
        "model_tag", type=str, nargs="?", help="The model tag to serve (optional if specified in config)"
    )
    add_server_args(serve)
    args = parser.parse_args(normalize_underscores(sys.argv[1:] if argv is None else argv))
    if args.model_tag:
        args.model = args.model_tag
    del args.model_tag, args.subparser
    return run_server(args, serve)


if __name__ == "__main__":
    sys.exit(main())
