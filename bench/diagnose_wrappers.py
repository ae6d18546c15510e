"""Does a verdict survive the wrapper the log came through? The dev crash logs re-printed the way launchers and log
shippers print a child's output, each diagnosed again and compared with the verdict on the log as posted.

    .venv/bin/python bench/diagnose_wrappers.py [--show N]

Unseen logs differ from the corpus less in what the engine says than in how it reached the reader: a Docker Compose
service prefix, Kubernetes' RFC 3339 timestamps, Ray's actor tag, journald, a JSON log shipper, FastChat's relay of
stdout at INFO, a Markdown indent, Windows line ends, a console that hard-wraps at its width; and whole pastes: Slack's or a page's
entities, a quote, line numbers, a log in one JSON string or a Python repr. Each wrapper is
applied to every line of every dev log (tests/crashcorpus.py ``dev``; judged splits are never touched); a verdict
that changes is a rule keyed on a line's shape, not its content. ``--show N`` prints up to N changed verdicts (dev
logs only) per wrapper.
"""

from __future__ import annotations

import argparse
import html
import json
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.diagnose import diagnose  # noqa: E402
from tests.crashcorpus import corpus  # noqa: E402


def _json_line(line: str) -> str:
    return json.dumps({"ts": "2025-06-01T10:00:00.000Z", "level": "info", "stream": "stdout", "message": line})


WRAPPERS: dict[str, Callable[[str], str]] = {
    "compose": lambda line: f"engine-1  | {line}",
    "kubectl --timestamps": lambda line: f"2025-06-01T10:00:00.123456789Z {line}",
    "ray actor tag": lambda line: f"(RayWorkerWrapper pid=4242, ip=10.0.0.7) {line}",
    "journald": lambda line: f"Jun 01 10:00:00 gpu-box-3 python[4242]: {line}",
    "json shipper": _json_line,
    "fastchat stdout relay": lambda line: f"2025-06-01 10:00:00 | INFO | stdout | {line}",
    "markdown indent": lambda line: f"    {line}",
}


def _numbered(log: str) -> str:
    return "\n".join(f"{number:>6}\t{line}" for number, line in enumerate(log.split("\n"), start=1))


#: Ways a whole log is pasted (bot/diagnose/paste.py undoes them): Slack's entity escaping of &, < and >, an HTML
#: page's escaping (quotes too), a Markdown / e-mail quote, ``cat -n``'s line numbers, a whole log in one JSON
#: string, a Python repr of captured output.
PASTES: dict[str, Callable[[str], str]] = {
    "slack entities": lambda log: log.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"),
    "html escaped": html.escape,
    "markdown quote": lambda log: "\n".join(f"> {line}" for line in log.split("\n")),
    "cat -n": _numbered,
    "one json string": lambda log: json.dumps({"level": "error", "log": log}),
    "python repr": lambda log: f"stderr: {(log + chr(10)).encode()!r}",  # (captured output ends in a newline)
    "markdown code fence": lambda log: f"```log\n{log}\n```",
}


def hard_wrap(log: str, width: int) -> str:
    """The log as a console of ``width`` columns copies it: every longer line cut into pieces of that width."""
    out: list[str] = []
    for line in log.replace("\r\n", "\n").split("\n"):
        while len(line) > width:
            out.append(line[:width])
            line = line[width:]
        out.append(line)
    return "\n".join(out)


def rewrap(log: str, wrapper: Callable[[str], str], crlf: bool = False) -> str:
    lines = [wrapper(line) for line in log.replace("\r\n", "\n").split("\n") if line != ""]
    return ("\r\n" if crlf else "\n").join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", type=int, default=0, help="print up to N changed verdicts per wrapper")
    args = parser.parse_args()
    entries = corpus("dev")
    base = {name: diagnose(entry["log"]).category for name, entry in entries}
    cases: dict[str, Callable[[str], str]] = {label: (lambda log, w=wrapper: rewrap(log, w))
                                              for label, wrapper in WRAPPERS.items()}
    cases["windows line ends"] = lambda log: rewrap(log, lambda line: line, crlf=True)
    for width in (80, 120, 200):
        cases[f"console hard wrap {width}"] = lambda log, w=width: hard_wrap(log, w)
    cases.update(PASTES)
    total_same = total = 0
    for label, transform in cases.items():
        changed = []
        for name, entry in entries:
            got = diagnose(transform(entry["log"])).category
            if got != base[name]:
                changed.append((name, base[name], got))
        same = len(entries) - len(changed)
        total_same, total = total_same + same, total + len(entries)
        print(f"{label:24} {same}/{len(entries)} verdicts unchanged ({same / len(entries):.3f})")
        for name, before, after in changed[:args.show]:
            print(f"    {name}: {before} -> {after}")
    print(f"{'all wrappers':24} {total_same}/{total} ({total_same / total:.3f})")


if __name__ == "__main__":
    main()
