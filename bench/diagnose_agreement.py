"""How far the corpus labels are from what an expert reading the tail alone would say, and the diagnoser against both.

    .venv/bin/python bench/diagnose_agreement.py

``tests/data/crashlogs/blind_labels.json`` holds a second label for 1,171 corpus logs: helpers of this project labelled
each log from its text and launch command only (not the thread, the corpus label, the diagnoser or its rules; the
files were renamed and shuffled so a log's split could not be told). Issue 12 sets the bar at "what an expert reading
the tail would say"; the corpus labels also use the thread (a title, a maintainer's reply). The agreement of the two
is the ceiling a reader of the tail can reach against the corpus labels. ``third_labels.json`` is a third reading,
the same way, of the 194 logs the first two labels disagree on: the label two of three readers share is then known
for every log read twice. Printed per split and round, as counts only (held-out logs are never named).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.diagnose import diagnose  # noqa: E402
from tests.crashcorpus import BLIND_ROUNDS as ROUNDS, CRASHLOGS, corpus  # noqa: E402

BLIND = CRASHLOGS / "blind_labels.json"
THIRD = CRASHLOGS / "third_labels.json"


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({part / whole:.3f})" if whole else "-"


def main() -> None:
    blind = json.loads(BLIND.read_text())
    for split in ("dev", "heldout"):
        entries = dict(corpus(split))
        for round_ in ROUNDS + ("all",):  # ("all": every drawing together)
            names = [name for name, label in blind.items() if round_ in ("all", label["round"]) and name in entries]
            rows = [(entries[name]["category"], blind[name], diagnose(entries[name]["log"]).category)
                    for name in names]
            agree = [row for row in rows if row[0] == row[1]["category"]]
            print(f"{split} / {round_}: {len(rows)} logs")
            print(f"  corpus label = blind label:          {_share(len(agree), len(rows))}")
            print(f"  corpus label in blind's two choices: "
                  f"{_share(sum(row[0] in (row[1]['category'], row[1]['second']) for row in rows), len(rows))}")
            print(f"  diagnoser = corpus label:            {_share(sum(row[2] == row[0] for row in rows), len(rows))}")
            print(f"  diagnoser = blind label:             "
                  f"{_share(sum(row[2] == row[1]['category'] for row in rows), len(rows))}")
            print(f"  diagnoser on the logs both agree on: {_share(sum(row[2] == row[0] for row in agree), len(agree))}")
            print(f"  diagnoser = either label:            "
                  f"{_share(sum(row[2] in (row[0], row[1]['category']) for row in rows), len(rows))}")
    _majority_of_three(blind, json.loads(THIRD.read_text()))


def _majority_of_three(blind: dict, third: dict) -> None:
    """The disputed logs read a third time: which label two of three readers share, and the diagnoser against it.

    Where the corpus and blind labels agree, that label is the majority already; where they differed, the third
    reader's label decides (it sides with one of them, or with neither: no majority, counted apart). Logs with no
    blind label (dev logs never drawn) have no majority and are left out of that figure."""
    for split in ("dev", "heldout"):
        entries = dict(corpus(split))
        counts = {"third = corpus": 0, "third = blind": 0, "no majority": 0}
        right_corpus = right_majority = with_majority = 0
        for name, entry in entries.items():
            verdict = diagnose(entry["log"]).category
            majority: str | None = entry["category"]
            if name in third:
                if third[name]["category"] == entry["category"]:
                    counts["third = corpus"] += 1
                elif third[name]["category"] == blind[name]["category"]:
                    counts["third = blind"] += 1
                    majority = blind[name]["category"]
                else:
                    counts["no majority"] += 1
                    majority = None
            elif name not in blind or blind[name]["category"] != entry["category"]:
                majority = None  # (one reader only, or drawn after the third reading: no majority known)
            right_corpus += verdict == entry["category"]
            if majority is not None:
                with_majority += 1
                right_majority += verdict == majority
        print(f"{split} / majority of three readers: disputed logs {sum(counts.values())}: "
              + ", ".join(f"{key} {value}" for key, value in counts.items()))
        print(f"  diagnoser = corpus label:              {_share(right_corpus, len(entries))}")
        print(f"  diagnoser = label two of three share:  {_share(right_majority, with_majority)}")


if __name__ == "__main__":
    main()
