"""The real crash-log corpus, split into the part the diagnoser may be tuned on and the part it is judged on.

``dev``: tests/data/crashlogs/dev/*.json (the first corpus) plus every collected log marked ``"split": "dev"``.
``heldout``: collected logs marked ``"split": "heldout"``; ``grown``: tests/data/crashlogs/grown, a later batch taken in
by tools/crashlog_intake.py, which puts one thread in five (by the URL's hash) in ``heldout`` and the rest in ``dev``; ``blind``: tests/data/crashlogs/blind (collected apart);
``fresh``: tests/data/crashlogs/fresh (a later set, collected apart again, after the diagnoser was tuned on the others).
Held-out, blind and fresh logs are only ever scored in aggregate (tests and bench/diagnose_eval.py never print their
names or content), so the figures measured on them stay honest.
``aside``: tests/data/crashlogs/aside, the diagnose helper's own held-out excerpts from public issue threads (issue 12:
"keep part of anything you build aside"), written down before the diagnoser was scored on them; aggregate only.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Literal

CRASHLOGS = Path(__file__).resolve().parent / "data" / "crashlogs"
Split = Literal["dev", "heldout", "blind", "fresh", "aside"]
APART = ("blind", "fresh", "aside")  # judged sets kept in folders of their own
#: The drawings of the second, blind reading (crashlogs/blind_labels.json), in the order they were made (PROVENANCE.md).
BLIND_ROUNDS = ("first", "s-z", "aa-ad", "af-3j", "k-m", "n-t", "u-z", "3aa-ab", "ac-ah", "3ai-4z")


def corpus(split: Split) -> list[tuple[str, dict]]:
    """(name, entry) for every log of ``split``; names are ``dev/x``, ``collected/x``, ``blind/x`` or ``fresh/x``.
    ``blind`` and ``fresh`` are sets collected apart by others for judging: they are only ever scored in aggregate,
    like ``heldout``."""
    out: list[tuple[str, dict]] = []
    if split in APART:
        entries = [(f"{split}/{path.stem}", json.loads(path.read_text()))
                   for path in sorted((CRASHLOGS / split).glob("*.json"))]
        return [(name, entry) for name, entry in entries if "category" in entry and "log" in entry]
    if split == "dev":
        first = sorted((CRASHLOGS / "dev").glob("*.json"))
        out += [(f"dev/{path.stem}", json.loads(path.read_text())) for path in first]
    for folder in ("collected", "grown"):
        for path in sorted((CRASHLOGS / folder).glob("*.json")):
            entry = json.loads(path.read_text())
            if entry.get("split", "dev") == split:
                out.append((f"{folder}/{path.stem}", entry))
    return out


_SOURCE = re.compile(r"https://github\.com/[\w.-]+/(?P<repo>[\w.-]+)/(?:issues|pull)/(?P<number>\d+)")


def form_defects(entry: dict, stem: str, categories: set[str]) -> list[str]:
    """The kinds of defect of one collected entry's fields (empty when well-formed): engine, category, log, decisive
    line, fix, notes, a GitHub issue / PR source, and the file name ``<engine>-<repo>-<number>`` built from it."""
    found = []
    if entry["engine"] not in ("sglang", "vllm"):
        found.append("engine is neither sglang nor vllm")
    if entry["category"] not in categories:
        found.append("category not in the taxonomy")
    if not (isinstance(entry["log"], str) and entry["log"].strip()):
        found.append("log is empty")
    elif not (isinstance(entry["decisive"], str) and entry["decisive"].strip() and entry["decisive"] in entry["log"]):
        found.append("decisive line does not occur in the log")
    if entry["category"] != "none" and not (isinstance(entry["fix"], str) and entry["fix"].strip()):
        found.append("a crash without a fix")
    if not (isinstance(entry["notes"], str) and entry["notes"].strip()):
        found.append("no notes on where and how the log was taken")
    match = _SOURCE.fullmatch((entry["source"] or "").split("#")[0].rstrip("/"))
    if not match:
        found.append("source is not a GitHub issue / pull request URL")
    elif not re.fullmatch(rf"{entry['engine']}-{re.escape(match['repo'])}-{match['number']}(-\d+)?", stem):
        found.append("file name is not <engine>-<repo>-<number> of its source")
    return found
