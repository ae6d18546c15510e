"""Scores the parser on a request corpus (`{"text", "expect"}` lines, see tests/data/corpus/README.md).

Run as a script for the figures the issue reports:  .venv/bin/python -m tests.corpus_score [FILE.jsonl ...]
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from bot.inventory import Inventory
from bot.models import PUBLIC_REQUEST_FIELDS, DeployRequest, ParseError
from bot.request import parse_request

CORPUS = Path(__file__).resolve().parent / "data" / "corpus"
FLEET2 = CORPUS / "fleet2_inventory.json"


def corpus_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def mismatch(got: DeployRequest | ParseError, expect: dict) -> str | None:
    """Why `got` is not what `expect` says, or None when it is.

    Beyond the README's fields: `reuse_last` (default false) is checked, and `ignored` lists phrases that must
    each be named in the request's `ignored` (the parser says what it did not act on).
    """
    if "error" in expect:
        if isinstance(got, ParseError) and got.kind == expect["error"] and got.message:
            return None
        return f"expected {expect['error']}, got {got!r}"
    if not isinstance(got, DeployRequest):
        return f"expected a request, got {got.kind}: {got.message}"
    want = dict.fromkeys(PUBLIC_REQUEST_FIELDS)
    want.update({k: v for k, v in expect.items() if k not in ("reuse_last", "ignored")})
    if got.public() != want:
        return f"expected {want}, got {got.public()}"
    if got.reuse_last != expect.get("reuse_last", False):
        return f"expected reuse_last={expect.get('reuse_last', False)}"
    named = " | ".join(getattr(got, "ignored", [])).lower()
    missing = [phrase for phrase in expect.get("ignored", []) if phrase.lower() not in named]
    if missing:
        return f"expected {missing} among ignored, got {getattr(got, 'ignored', [])}"
    return None


@dataclass
class Score:
    right: int
    total: int
    failures: list[tuple[str, str]]

    @property
    def percent(self) -> float:
        return 100.0 * self.right / self.total if self.total else 0.0


def score(path: Path, inventory: Inventory) -> Score:
    failures = []
    lines = corpus_lines(path)
    for case in lines:
        why = mismatch(parse_request(case["text"], inventory), case["expect"])
        if why:
            failures.append((case["text"], why))
    return Score(len(lines) - len(failures), len(lines), failures)


def inventory_for(name: str) -> Inventory:
    """fleetN_*.jsonl refers to fleetN_inventory.json; requests.jsonl to inventory.json."""
    fleet = name.split("_")[0] + "_inventory.json" if name.startswith("fleet") else "inventory.json"
    return Inventory.from_corpus(CORPUS / fleet)


def main(argv: list[str]) -> int:
    for name in argv or ["fleet2_dev.jsonl", "fleet2_heldout.jsonl", "fleet3_blind.jsonl"]:
        result = score(CORPUS / name, inventory_for(name))
        print(f"{name}: {result.right}/{result.total} = {result.percent:.1f}%")
        for text, why in result.failures:
            print(f"  {text!r}: {why}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
