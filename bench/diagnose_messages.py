"""Score the crash diagnoser on the engines' own error messages, taken from their source at a release
(tests/data/engine_messages, tools/engine_messages): wordings no posted log may show yet.

    .venv/bin/python bench/diagnose_messages.py

Each message is diagnosed twice: as the one line a pasted excerpt often is ("ValueError: <message>"), and framed as
a traceback's end with the raising file ("File .../vllm/config/speculative.py", then the exception line), as a full
log shows it. The dev part (four in five, by a hash of engine, path and line) is what the vocabulary rules were read
against; the held-out part is only ever counted, and so is the newer releases' set (vLLM 0.33.0, SGLang 0.5.23:
wordings the first releases do not have), which was collected after the rules were written. vLLM 0.34.0's own
wordings (``newest``) are split the same way: its dev part was read for the vocabulary, its held-out fifth counted.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.diagnose import diagnose  # noqa: E402
from tests.engine_messages import MODES, messages, rendered  # noqa: E402


def main() -> None:
    for split in ("dev", "heldout", "newer", "newest_dev", "newest_heldout"):
        entries = messages(split)
        for mode in MODES:
            results = [(entry["category"], diagnose(rendered(entry, mode), exit_code=1,
                                                    engine=entry["engine"]).category) for entry in entries]
            right = sum(expected == got for expected, got in results)
            print(f"{split}_{mode}_accuracy: {right / len(results):.3f} ({right}/{len(results)})")
            if split in ("dev", "newest_dev"):
                for (expected, got), count in Counter(r for r in results if r[0] != r[1]).most_common(6):
                    print(f"  confused {expected} -> {got}: {count}")


if __name__ == "__main__":
    main()
