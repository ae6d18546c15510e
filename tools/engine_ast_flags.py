"""Fallback when an engine release cannot be imported on CPU: its option definitions read from the wheel's source.

Every ``<parser>.add_argument("--flag", ...)`` call in the files that define the server's arguments (SGLang:
srt/server_args.py; vLLM: engine/arg_utils.py and entrypoints/openai/cli_args.py). Literal option strings, choices,
action and default are kept; a default or choice list computed at run time is recorded as its source text. vLLM
builds many options from config dataclasses at run time, so for vLLM this finds fewer options than importing does.
"""

from __future__ import annotations

import ast
import zipfile
from pathlib import Path

SOURCES = {
    "sglang": ("sglang/srt/server_args.py",),
    "vllm": ("vllm/engine/arg_utils.py", "vllm/entrypoints/openai/cli_args.py"),
}


def _literal(node: ast.AST | None) -> object:
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError):
        return ast.unparse(node)


def _action(call: ast.Call) -> dict | None:
    options = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if not options or not all(o.startswith("-") for o in options):
        return None
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    action = _literal(kw.get("action"))
    choices = _literal(kw.get("choices"))
    return {
        "options": options,
        "dest": _literal(kw.get("dest")) or options[0].lstrip("-").replace("-", "_"),
        "kind": str(action) if action else "store",
        "default": _literal(kw.get("default")),
        "choices": list(choices) if isinstance(choices, (list, tuple)) else None,
        "nargs": _literal(kw.get("nargs")),
        "const": None,
        "type": ast.unparse(kw["type"]) if "type" in kw else None,
        "required": bool(_literal(kw.get("required"))),
        "deprecated": False,
    }


def actions_from_source(text: str) -> list[dict]:
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
            action = _action(node)
            if action:
                found.append(action)
    return found


def actions_from_wheel(wheel: Path, engine: str) -> list[dict]:
    actions: list[dict] = []
    with zipfile.ZipFile(wheel) as archive:
        for name in SOURCES[engine]:
            if name in archive.namelist():
                actions += actions_from_source(archive.read(name).decode())
    return actions
