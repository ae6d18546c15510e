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

DATA = Path(__file__).resolve().parent / "data" / "engine_messages"
MESSAGES = DATA / "engine_messages.jsonl"
#: The newer releases' own wordings (vLLM 0.33.0, SGLang 0.5.23), none of them in MESSAGES: judged only, whole.
NEWER = DATA / "engine_messages_newer.jsonl"
#: vLLM 0.34.0's own wordings, in neither set above nor in vLLM 0.33.0 (collected 2026-12-04): split like MESSAGES.
NEWEST = DATA / "engine_messages_newest.jsonl"
MODES = ("line", "framed")
Mode = Literal["line", "framed"]


def split_of(entry: dict) -> str:
    key = f"{entry['engine']}:{entry['path']}:{entry['line']}".encode()
    return "heldout" if int(hashlib.sha1(key).hexdigest(), 16) % 5 == 0 else "dev"


def messages(split: str) -> list[dict]:
    """``dev`` / ``heldout`` of the first releases' messages; ``newer``: every message of the newer releases;
    ``newest`` / ``newest_dev`` / ``newest_heldout``: vLLM 0.34.0's, whole or split by the same hash."""
    if split == "newer":
        return [json.loads(line) for line in NEWER.read_text().splitlines() if line.strip()]
    if split.startswith("newest"):
        # (split as the first set is: the dev part read for the vocabulary, the held-out fifth only counted)
        entries = [json.loads(line) for line in NEWEST.read_text().splitlines() if line.strip()]
        return [entry for entry in entries if split == "newest" or f"newest_{split_of(entry)}" == split]
    entries = [json.loads(line) for line in MESSAGES.read_text().splitlines() if line.strip()]
    return [entry for entry in entries if split_of(entry) == split]


def rendered(entry: dict, mode: Mode) -> str:
    line = f"{entry['exception']}: {entry['message']}\n"
    if mode == "line":
        return line
    return (f'Traceback (most recent call last):\n  File "/usr/local/lib/python3.12/dist-packages/{entry["path"]}", '
            f'line {entry["line"]}, in check\n    raise {entry["exception"]}(\n{line}')
