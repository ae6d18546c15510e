"""The simulated engines' argument parsers, built from the real releases' captured options (the JSON written by
tools/capture_engine_help.py and copied next to the engine by build_sim_host), and their --help printed as the
real build printed it. So a flag, alias, choice list or default in a simulated engine is exactly its release's.

Types are what the capture named: int / float / human-readable ints convert as the engines do; JSON-typed options
(vLLM's --speculative-config and the like) parse JSON; the rest stay strings.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

CAPTURE_DIR = "captured"  # inside the simulated engine package: help.txt, help-all.txt, options.json


def human_readable_int(value: str) -> int:
    """Lengths with a suffix: lowercase k/m/g/t x1000 steps, uppercase or IEC (Ki, Mi) x1024 steps (vLLM's rule;
    the planner itself always passes plain integers)."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(([kmgtKMGT])(i?))?", value.strip())
    if not match:
        raise argparse.ArgumentTypeError(f"Invalid format: {value!r}")
    number, letter, iec = float(match.group(1)), match.group(3), match.group(4)
    if not letter:
        return int(number)
    power = "kmgt".index(letter.lower()) + 1
    base = 1024 if (iec or letter.isupper()) else 1000
    return int(number * base**power)


def json_or_scalar(value: str) -> Any:
    """Options whose type the engine computes (optional_type(...), JSON configs): JSON when it parses, else text."""
    text = value.strip()
    if text in ("None", "null"):
        return None
    try:
        return json.loads(text)
    except ValueError:
        if text.startswith(("{", "[")):  # meant as JSON and malformed: the engine's json.loads fails here too
            raise argparse.ArgumentTypeError(f"invalid JSON: {value!r}") from None
        return value


def _converter(type_name: str | None) -> Any:
    if type_name == "int":
        return int
    if type_name == "float":
        return float
    if type_name and type_name.startswith("human_readable_int"):
        return lambda v: v if v == "auto" else human_readable_int(v)
    if type_name in ("loads", "_parse_type", "parse_dataclass", "union_dict_and_str", "_optional_type", "json_list_type"):
        return json_or_scalar
    return str


def _add_boolean_pair(parser: argparse.ArgumentParser, spec: dict) -> None:
    """BooleanOptionalAction / vLLM's EnableDisableAction: the first spelling sets True, its inverses False."""
    first, *others = spec["options"]
    parser.add_argument(first, dest=spec["dest"], action="store_const", const=True, default=spec["default"])
    for option in others:
        parser.add_argument(option, dest=spec["dest"], action="store_const", const=False, default=spec["default"])


def _converted_default(default: Any, convert: Any) -> Any:
    """argparse runs `type` over a string default; a captured default that is the repr of an engine object (a
    config dataclass) would not parse, and the engine builds that object itself when the option is not given."""
    if not isinstance(default, str) or convert is str:
        return default
    try:
        return convert(default)
    except (ValueError, TypeError, argparse.ArgumentTypeError):
        return None


def add_captured_options(parser: argparse.ArgumentParser, specs: list[dict]) -> None:
    for spec in specs:
        kind = spec["kind"]
        common: dict[str, Any] = {"dest": spec["dest"], "default": spec["default"]}
        if spec.get("required"):
            common["required"] = True
        if kind in ("BooleanOptionalAction", "EnableDisableAction"):
            _add_boolean_pair(parser, spec)
        elif kind.endswith("StoreTrueAction") or kind == "store_true":
            parser.add_argument(*spec["options"], action="store_true", **common)
        elif kind.endswith("StoreFalseAction") or kind == "store_false":
            parser.add_argument(*spec["options"], action="store_false", **common)
        elif kind.endswith("CountAction"):
            parser.add_argument(*spec["options"], action="count", **common)
        elif spec.get("nargs") == 0:  # other zero-argument actions (deprecated flags, store_const)
            parser.add_argument(*spec["options"], action="store_const", const=spec.get("const", True), **common)
        else:
            convert = _converter(spec.get("type"))
            common["default"] = _converted_default(spec["default"], convert)
            extra: dict[str, Any] = {"type": convert}
            if spec.get("nargs") not in (None, "None"):
                extra["nargs"] = spec["nargs"]
            if spec.get("choices"):
                extra["choices"] = spec["choices"]
            if kind.endswith("AppendAction"):
                extra["action"] = "append"
            parser.add_argument(*spec["options"], **common, **extra)


def capture_dir(package_file: str) -> Path:
    return Path(package_file).resolve().parent / CAPTURE_DIR


def load_options(folder: Path) -> list[dict]:
    return json.loads((folder / "options.json").read_text())["actions"]


def print_help_and_exit(folder: Path, argv: list[str]) -> None:
    """`--help` (and vLLM's `--help=all` / `--help=<group>`): the captured text, as the real build printed it."""
    for arg in argv:
        if arg in ("-h", "--help") or arg.startswith("--help="):
            wanted = folder / ("help-all.txt" if arg.startswith("--help=") else "help.txt")
            if not wanted.exists():
                wanted = folder / "help.txt"
            sys.stdout.write(wanted.read_text())
            sys.stdout.flush()
            raise SystemExit(0)


def captured_parser(folder: Path, prog: str | None = None, description: str | None = None) -> argparse.ArgumentParser:
    """A parser with exactly the captured release's options (help handled by print_help_and_exit)."""
    if prog is None:  # the program name the real build printed ("launch_server.py", "sglang serve", "api_server.py")
        usage = re.match(r"(?:.*\n)*?usage: (\S+(?: serve)?)", (folder / "help.txt").read_text())
        prog = usage.group(1) if usage else None
    parser = argparse.ArgumentParser(prog=prog, description=description, add_help=False)
    add_captured_options(parser, load_options(folder))
    return parser
