"""The engines' own error messages (tests/data/engine_messages/engine_messages.jsonl), split and rendered as logs.

The split is by the SHA-1 of engine, path and line (one in five held out), so no one chose which messages are judged.
``rendered(entry, "line")`` is the message as a one-line excerpt; ``"framed"`` puts the raising file's frame above it,
as the end of a traceback shows it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Literal

MESSAGES = Path(__file__).resolve().parent / "data" / "engine_messages" / "engine_messages.jsonl"
MODES = ("line", "framed")
Mode = Literal["line", "framed"]


def split_of(entry: dict) -> str:
    key = f"{entry['engine']}:{entry['path']}:{entry['line']}".encode()
    return "heldout" if int(hashlib.sha1(key).hexdigest(), 16) % 5 == 0 else "dev"


def messages(split: str) -> list[dict]:
    entries = [json.loads(line) for line in MESSAGES.read_text().splitlines() if line.strip()]
    return [entry for entry in entries if split_of(entry) == split]


def rendered(entry: dict, mode: Mode) -> str:
    line = f"{entry['exception']}: {entry['message']}\n"
    if mode == "line":
        return line
    return (f'Traceback (most recent call last):\n  File "/usr/local/lib/python3.12/dist-packages/{entry["path"]}", '
            f'line {entry["line"]}, in check\n    raise {entry["exception"]}(\n{line}')
