"""Take collectors' crash logs into the corpus: validate, drop repeats, and split a fifth aside by thread.

    .venv/bin/python tools/crashlog_intake.py INCOMING_DIR [INCOMING_DIR ...] [--into tests/data/crashlogs/grown]

Each incoming file is one log in the corpus format (keys of tests/data/crashlogs/fresh, without ``split``). The
intake refuses a file whose decisive line is not in its log, whose category is not in the taxonomy, or whose source
thread another set already holds (every set under tests/data/crashlogs, compared without the #fragment); two files
from one thread land in the same split. The split is decided by the thread URL's SHA-1 (one in five goes to
``heldout``), never by the collector or by whoever tunes the diagnoser, so the held-out fifth is chosen blind.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CRASHLOGS = ROOT / "tests" / "data" / "crashlogs"
TAXONOMY = ROOT / "tests" / "data" / "corpus" / "TAXONOMY.md"
KEYS = ("engine", "engine_version", "source", "category", "launch_command", "log", "decisive", "fix", "notes")
SOURCE = re.compile(r"https://github\.com/[\w.-]+/(?P<repo>[\w.-]+)/(?:issues|pull)/(?P<number>\d+)")
HELDOUT_SHARE = 5  # one thread in five


def categories() -> set[str]:
    rows = re.findall(r"^([a-z_]+)\s+\|", TAXONOMY.read_text(), re.MULTILINE)
    return {row for row in rows if row != "category"} | {"none"}


def thread(url: str) -> str:
    return url.split("#")[0].rstrip("/")


def known_threads(skip: Path) -> set[str]:
    out = set()
    for path in CRASHLOGS.glob("*/*.json"):
        if path.parent == skip:
            continue
        source = json.loads(path.read_text()).get("source")
        if source:
            out.add(thread(source))
    return out


def split_of(url: str) -> str:
    digest = int(hashlib.sha1(thread(url).encode()).hexdigest(), 16)
    return "heldout" if digest % HELDOUT_SHARE == 0 else "dev"


def defects(entry: dict, allowed: set[str]) -> list[str]:
    found = [f"missing key {key}" for key in KEYS if key not in entry]
    if found:
        return found
    if entry["engine"] not in ("sglang", "vllm"):
        found.append("engine is neither sglang nor vllm")
    if entry["category"] not in allowed:
        found.append(f"category {entry['category']!r} not in the taxonomy")
    if not isinstance(entry["log"], str) or not entry["log"].strip():
        found.append("empty log")
    elif not isinstance(entry["decisive"], str) or not entry["decisive"].strip() \
            or entry["decisive"] not in entry["log"]:
        found.append("decisive line not in the log")
    if not SOURCE.fullmatch(thread(entry["source"] or "")):
        found.append("source is not a GitHub issue / pull request URL")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("incoming", nargs="+", type=Path)
    parser.add_argument("--into", type=Path, default=CRASHLOGS / "grown")
    parser.add_argument("--batch", default="2026-12-02")
    args = parser.parse_args()
    args.into.mkdir(parents=True, exist_ok=True)
    allowed, seen = categories(), known_threads(args.into)
    per_thread: dict[str, int] = {}
    for path in sorted(args.into.glob("*.json")):
        source = thread(json.loads(path.read_text())["source"])
        per_thread[source] = per_thread.get(source, 0) + 1
    taken = refused = 0
    for path in sorted(p for folder in args.incoming for p in folder.glob("*.json")):
        try:
            entry = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            print(f"refused {path}: not JSON ({exc})")
            refused += 1
            continue
        problems = defects(entry, allowed)
        source = thread(entry.get("source") or "")
        if source in seen:
            problems.append("thread already in another set")
        if per_thread.get(source, 0) >= 2:
            problems.append("thread already gave two logs")
        if problems:
            print(f"refused {path}: {'; '.join(problems)}")
            refused += 1
            continue
        match = SOURCE.fullmatch(source)
        assert match is not None
        count = per_thread.get(source, 0)
        stem = f"{entry['engine']}-{match['repo']}-{match['number']}" + (f"-{count + 1}" if count else "")
        if (args.into / f"{stem}.json").exists() and not count:
            # (two owners' repos of one name, Ascend/sglang#668 and sgl-project/sglang#668: never overwrite)
            print(f"refused {path}: {stem}.json is taken by another repository's thread of that number")
            refused += 1
            continue
        out = {key: entry[key] for key in KEYS}
        out["split"], out["batch"] = split_of(source), args.batch
        (args.into / f"{stem}.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
        per_thread[source] = count + 1
        taken += 1
    print(f"taken {taken}, refused {refused}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
