"""The blind second reading (tests/data/crashlogs/blind_labels.json, PROVENANCE.md) is well-formed: every name is a log
of the corpus, every label a taxonomy id, and the rounds are the drawings it was made of (PROVENANCE.md)."""

from __future__ import annotations

import json

from tests.crashcorpus import BLIND_ROUNDS, CRASHLOGS, corpus
from tools.crashlog_intake import categories


def test_every_blind_label_names_a_corpus_log_and_a_taxonomy_category() -> None:
    labels = json.loads((CRASHLOGS / "blind_labels.json").read_text())
    names = {name for split in ("dev", "heldout") for name, _ in corpus(split)}
    allowed = categories()
    assert len(labels) >= 500
    assert set(labels) <= names
    assert all(label["category"] in allowed for label in labels.values())
    assert all(label["second"] in allowed | {""} for label in labels.values())
    assert {label["round"] for label in labels.values()} == set(BLIND_ROUNDS)


def test_the_third_reading_covers_exactly_the_logs_the_first_two_labels_disagree_on() -> None:
    """A third blind label (third_labels.json) for every log whose corpus and blind labels differed when it was
    drawn, and for no other: a majority of three readers is then defined for each disputed log."""
    third = json.loads((CRASHLOGS / "third_labels.json").read_text())
    blind = json.loads((CRASHLOGS / "blind_labels.json").read_text())
    entries = {name: entry for split in ("dev", "heldout") for name, entry in corpus(split)}
    allowed = categories()
    disputed = {name for name, label in blind.items() if label["category"] != entries[name]["category"]}
    assert set(third) == disputed
    assert all(label["category"] in allowed and label["second"] in allowed | {""} for label in third.values())
