"""The grown crash-log batch (tests/data/crashlogs/grown) is well-formed, new, and its held-out fifth was chosen blind.

Like the fresh set, these checks look at form only and report defects by kind and count, never by name: the held-out
part of the batch is judged, so nothing here prints which file has which verdict. The split is checked against the
rule that made it (tools/crashlog_intake.py: the SHA-1 of the thread URL, one in five held out), so nobody can have
moved a log between dev and held-out by hand; every log of one thread is on the same side.
"""

from __future__ import annotations

import json
from collections import Counter

from tests.crashcorpus import CRASHLOGS, corpus, form_defects
from tools.crashlog_intake import KEYS, categories, split_of, thread

GROWN = sorted((CRASHLOGS / "grown").glob("*.json"))
ENTRIES = [json.loads(path.read_text()) for path in GROWN]


def _defects(entry: dict, stem: str, allowed: set[str]) -> list[str]:
    if set(entry) != set(KEYS) | {"split", "batch"}:
        return ["keys differ from the corpus format"]
    found = form_defects(entry, stem, allowed)
    if entry["split"] != split_of(entry["source"]):
        found.append("split is not the one the thread's hash gives")
    return found


def test_every_grown_entry_is_well_formed_and_split_by_its_threads_hash() -> None:
    allowed = categories()
    assert "other" in allowed and len(allowed) > 10, "the taxonomy table could not be read"
    defects = Counter(kind for path, entry in zip(GROWN, ENTRIES) for kind in _defects(entry, path.stem, allowed))
    assert not defects, f"malformed grown entries, by kind: {dict(defects)}"


def test_grown_threads_are_new_and_give_at_most_two_logs() -> None:
    threads = Counter(thread(entry["source"]) for entry in ENTRIES)
    assert max(threads.values()) <= 2, "a thread gave more than two logs"
    elsewhere = {thread(json.loads(path.read_text()).get("source") or "")
                 for folder in ("dev", "collected", "blind", "fresh", "aside")
                 for path in (CRASHLOGS / folder).glob("*.json")}
    assert len(elsewhere) > 300, "the other sets could not be read"
    assert not set(threads) & elsewhere, f"{len(set(threads) & elsewhere)} grown thread(s) already in another set"


def test_the_grown_batch_feeds_dev_and_heldout_in_about_four_to_one() -> None:
    dev = [name for name, _ in corpus("dev") if name.startswith("grown/")]
    held = [name for name, _ in corpus("heldout") if name.startswith("grown/")]
    assert len(dev) + len(held) == len(GROWN) >= 150, "the grown batch lost entries (PROVENANCE.md has the counts)"
    assert 0.12 <= len(held) / len(GROWN) <= 0.28, "the hash split is far from one in five"
    assert {entry["engine"] for entry in ENTRIES} == {"sglang", "vllm"}
    assert len({entry["category"] for entry in ENTRIES}) >= 17, "the batch spans the taxonomy"
