"""Inside an engine's throwaway venv: build the engine's real argument parser and print its options as JSON.

    python engine_actions.py sglang|vllm

Each action: its option strings, dest, default, choices, nargs, type name and kind (store, store_true, ...), as
the engine's own argparse holds them: the defaults are the engine's, read from the parser it builds.
SGLang: ``ServerArgs.add_cli_args`` on a plain ArgumentParser (what ``prepare_server_args`` does); vLLM:
``make_arg_parser(FlexibleArgumentParser())`` from vllm.entrypoints.openai.cli_args (what api_server does).
"""

from __future__ import annotations

import argparse
import json
import sys


def sglang_parser() -> argparse.ArgumentParser:
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    return parser


def vllm_parser() -> argparse.ArgumentParser:
    try:
        from vllm.entrypoints.openai.cli_args import make_arg_parser
    except ModuleNotFoundError:  # 0.2x+: shared by the launchers
        from vllm.entrypoints.common.cli_args import make_arg_parser

    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:  # older releases keep it in vllm.utils
        from vllm.utils import FlexibleArgumentParser
    return make_arg_parser(FlexibleArgumentParser(description="vLLM OpenAI-Compatible RESTful API server."))


def jsonable(value: object) -> object:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    return repr(value)


def type_name(kind: object) -> str | None:
    if kind is None:
        return None
    return getattr(kind, "__name__", None) or type(kind).__name__


def describe(parser: argparse.ArgumentParser) -> list[dict]:
    actions = []
    for action in parser._actions:
        if not action.option_strings or isinstance(action, argparse._HelpAction):
            continue
        actions.append(
            {
                "options": list(action.option_strings),
                "dest": action.dest,
                "kind": type(action).__name__,
                "default": jsonable(action.default),
                "choices": [jsonable(c) for c in action.choices] if action.choices is not None else None,
                "nargs": action.nargs if isinstance(action.nargs, (int, str)) or action.nargs is None else None,
                "const": jsonable(action.const),
                "type": type_name(action.type),
                "required": bool(action.required),
                # the help prose is in the captured --help text; here only what a parser needs
                "deprecated": isinstance(action.help, str) and action.help.lower().startswith(("deprecated", "(deprecated")),
            }
        )
    return actions


def main() -> int:
    engine = sys.argv[1]
    parser = sglang_parser() if engine == "sglang" else vllm_parser()
    import engine_stubs  # already installed by sitecustomize; only read here

    out = {"actions": describe(parser), "stubbed": engine_stubs.real_top_level_stubs()}
    sys.stdout.write("\n@@ACTIONS@@" + json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
