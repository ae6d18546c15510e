"""The ``fresh`` crash-log set (tests/data/crashlogs/fresh) is well-formed and new.

The set is judged, so these checks look only at its form, never at what the diagnoser says about it, and a failure
reports the kind of defect and how many entries have it, not which ones (names and content of judged logs are never
printed; find the entry with a local script). Form: the keys every corpus entry has, a category from the taxonomy
(or ``none`` for a healthy start-up), a decisive line that occurs in the log, the public issue / PR URL the log was
copied from, a file name ``<engine>-<repo>-<number>`` built from that URL, and a source no other set already holds.
"""

from __future__ import annotations

import json
from collections import Counter

from tests.crashcorpus import CRASHLOGS, corpus, form_defects
from tools.crashlog_intake import categories

FRESH = sorted((CRASHLOGS / "fresh").glob("*.json"))
ENTRIES = [json.loads(path.read_text()) for path in FRESH]
KEYS = {"engine", "engine_version", "source", "category", "launch_command", "log", "decisive", "fix", "notes",
        "split"}


def _categories() -> set[str]:
    """Category ids of the taxonomy table (first column), plus ``none``, which the corpus uses for healthy logs."""
    return categories()


def _defects(entry: dict, stem: str, categories: set[str]) -> list[str]:
    """The kinds of defect one entry has (empty when well-formed)."""
    if set(entry) != KEYS:
        return ["keys differ from the corpus format"]
    found = form_defects(entry, stem, categories)
    if entry["split"] != "fresh":
        found.append('split is not "fresh"')
    return found


def test_every_fresh_entry_is_well_formed() -> None:
    categories = _categories()
    assert "other" in categories and len(categories) > 10, "the taxonomy table could not be read"
    defects = Counter(kind for path, entry in zip(FRESH, ENTRIES) for kind in _defects(entry, path.stem, categories))
    assert not defects, f"malformed fresh entries, by kind: {dict(defects)}"


def test_fresh_sources_are_new() -> None:
    """No source twice in the set, and none that dev/, collected/ or blind/ already holds: the set is unseen."""
    sources = Counter(entry["source"] for entry in ENTRIES)
    assert not [source for source, count in sources.items() if count > 1], "a source appears twice in fresh/"
    elsewhere = {json.loads(path.read_text()).get("source")
                 for folder in ("dev", "collected", "blind") for path in (CRASHLOGS / folder).glob("*.json")}
    assert len(elsewhere) > 100, "the other sets could not be read"
    assert not set(sources) & elsewhere, f"{len(set(sources) & elsewhere)} fresh source(s) already in another set"


def test_fresh_split_reads_the_whole_folder() -> None:
    entries = corpus("fresh")
    assert len(entries) == len(FRESH) > 0
    assert all(name.startswith("fresh/") and entry["split"] == "fresh" for name, entry in entries)
    assert {entry["engine"] for _, entry in entries} == {"sglang", "vllm"}, "both engines are represented"
    crashes = sum(entry["category"] != "none" for _, entry in entries)
    # floors, not exact counts: the set may grow, but losing files by accident must show (PROVENANCE.md has the counts)
    assert crashes >= 25 and len(entries) - crashes >= 10, "the fresh set lost entries"
    assert len({entry["category"] for _, entry in entries}) >= 12, "the set spans most taxonomy categories"
