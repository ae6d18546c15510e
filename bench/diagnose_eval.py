"""Score the crash diagnoser on the real crash-log corpus: per-category precision / recall, dev and held-out apart.

    .venv/bin/python bench/diagnose_eval.py [--confusions]

Prints, for each split (``tests/crashcorpus.py``): logs, category accuracy from the log alone and again with the
launch command the corpus gives for some logs (what the bot always knows of its own launches), false alarms (a
healthy log called a crash), crashes called healthy, the decisive-line hit rate (the first evidence line holds the
file's ``decisive`` text, where the file gives one), and a per-category table (support, predicted, precision,
recall). ``--confusions`` lists the dev logs whose category is wrong (expected -> got, with the cause) and, for
every split, how many logs of each category got each wrong verdict (counts only). Held-out, blind and fresh logs are
only counted: their names and content are never printed, so those figures stay measurements on logs nobody tuned
against.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.diagnose import diagnose  # noqa: E402
from tests.crashcorpus import Split, corpus  # noqa: E402


def score(split: Split, with_command: bool = False) -> dict:
    rows = []
    for name, entry in corpus(split):
        command = entry.get("launch_command") if with_command else None
        result = diagnose(entry["log"], command=command)
        decisive = entry.get("decisive")
        hit = None if not decisive else bool(result.evidence) and decisive in result.evidence[0].text
        rows.append((name, entry["category"], result.category, hit, result.cause, result.confidence,
                     tuple(result.alternatives)))
    return {"rows": rows}


def table(rows: list[tuple]) -> list[str]:
    support = Counter(expected for _, expected, *_ in rows)
    predicted = Counter(got for _, _, got, *_ in rows)
    right = Counter(expected for _, expected, got, *_ in rows if expected == got)
    out = [f"  {'category':32} {'support':>7} {'predicted':>9} {'precision':>9} {'recall':>7}"]
    for category in sorted(set(support) | set(predicted)):
        precision = f"{right[category] / predicted[category]:.2f}" if predicted[category] else "-"
        recall = f"{right[category] / support[category]:.2f}" if support[category] else "-"
        out.append(f"  {category:32} {support[category]:>7} {predicted[category]:>9} {precision:>9} {recall:>7}")
    return out


def calibration(rows: list[tuple]) -> list[str]:
    """How often a verdict is right at each stated confidence: confidence that means something."""
    bands = ((0.0, 0.5), (0.5, 0.7), (0.7, 0.85), (0.85, 1.01))
    out = [f"  {'confidence':16} {'verdicts':>8} {'right':>6}"]
    for low, high in bands:
        inside = [r for r in rows if low <= r[5] < high]
        right = sum(r[1] == r[2] for r in inside)
        share = f"{right / len(inside):.2f}" if inside else "-"
        out.append(f"  [{low:.2f}, {min(high, 1.0):.2f}){'':3} {len(inside):>8} {share:>6}")
    return out


def confusion_counts(rows: list[tuple]) -> list[str]:
    """How many logs of each expected category got each wrong verdict: counts only, so it is shown for judged splits
    too (no name, line or single verdict of theirs is printed)."""
    pairs = Counter((expected, got) for _, expected, got, *_ in rows if expected != got)
    return [f"  confused {expected} -> {got}: {count}" for (expected, got), count in sorted(pairs.items())]


def report(split: Split, confusions: bool) -> float:
    rows = score(split)["rows"]
    if not rows:
        print(f"{split}: no logs")
        return 0.0
    correct = sum(expected == got for _, expected, got, *_ in rows)
    false_alarms = sum(expected == "none" and got != "none" for _, expected, got, *_ in rows)
    missed = sum(expected != "none" and got == "none" for _, expected, got, *_ in rows)
    hits = [r[3] for r in rows if r[3] is not None]
    print(f"{split}_logs: {len(rows)}")
    print(f"{split}_healthy_logs: {sum(r[1] == 'none' for r in rows)}")
    print(f"{split}_category_accuracy: {correct / len(rows):.3f} ({correct}/{len(rows)})")
    named = sum(expected == got or expected in alternatives for _, expected, got, *_, alternatives in rows)
    print(f"{split}_category_or_named_alternative: {named / len(rows):.3f} ({named}/{len(rows)})")
    print(f"{split}_false_alarms: {false_alarms}")
    print(f"{split}_crashes_called_healthy: {missed}")
    if hits:
        print(f"{split}_decisive_line_hits: {sum(hits) / len(hits):.3f} ({sum(hits)}/{len(hits)})")
    with_command = score(split, with_command=True)["rows"]
    right_with = sum(expected == got for _, expected, got, *_ in with_command)
    alarms_with = sum(expected == "none" and got != "none" for _, expected, got, *_ in with_command)
    # As the bot diagnoses its own launches: it always knows the command line (the corpus has it for some logs).
    print(f"{split}_category_accuracy_with_launch_command: {right_with / len(rows):.3f} ({right_with}/{len(rows)}, "
          f"{sum(1 for _, entry in corpus(split) if entry.get('launch_command'))} logs have one; "
          f"false alarms {alarms_with})")
    if split == "heldout":  # the first collection's fifth and the grown batch's fifth, apart as well
        for folder in ("collected", "grown"):
            part = [row for row in rows if row[0].startswith(folder + "/")]
            if part:
                ok = sum(expected == got for _, expected, got, *_ in part)
                print(f"{split}_{folder}_category_accuracy: {ok / len(part):.3f} ({ok}/{len(part)})")
    print("\n".join(table(rows)))
    print("\n".join(calibration(rows)))
    if confusions:
        print("\n".join(confusion_counts(rows)))
    if confusions and split == "dev":
        for name, expected, got, hit, cause, confidence, _ in rows:
            if expected != got:
                print(f"  MISS {name}: {expected} -> {got} ({confidence:.2f}) {cause[:140]}")
    return correct / len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--confusions", action="store_true", help="list the dev logs classified wrong")
    args = parser.parse_args()
    for split in ("dev", "heldout", "blind", "fresh", "aside"):
        report(split, args.confusions)
        print()


if __name__ == "__main__":
    main()
