"""Write bot/diagnose/setting_phrases.py: the engines' launch settings as the words their checks use for them.

    .venv/bin/python tools/setting_phrases.py [--releases sglang-0.5.9 vllm-0.11.0]

An engine's check of its settings often names a setting in prose, not as a flag: "PD-Multiplexing is not compatible
with chunked prefill" (--chunked-prefill-size), "Please enable dp attention when setting enable_dp_lm_head"
(--enable-dp-attention), "The expert parallel size must be 1" (--expert-parallel-size). The phrases are the runs of
two to four words of every long option in the engines' own parsers (bot/simhost/enginehelp/*.json, captured from
the wheels on PyPI), less the on/off verbs in front ("enable-", "disable-", "no-", ...) and less any phrase in
another category's words (memory, KV cache, CUDA graphs, quantization, speculative decoding, ports, paths), since a
check in those words is that category's.

Made from the first captured releases only (SGLang 0.5.9, vLLM 0.11.0) by default, the same releases whose messages
the vocabulary rules were read against, so the newer releases' messages (tests/data/engine_messages) still measure
wordings the phrases were not made from.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HELP = ROOT / "bot" / "simhost" / "enginehelp"
OUT = ROOT / "bot" / "diagnose" / "setting_phrases.py"
SWITCH_WORDS = {"enable", "disable", "no", "use", "allow", "force", "skip"}
#: Words of another category's checks (a phrase holding one is left out).
OTHER_WORDS = {"memory", "mem", "cache", "caching", "graph", "graphs", "quantization", "quantize", "quant", "modelopt",
               "speculative", "draft", "ngram", "eagle", "mtp", "nextn", "port", "host", "path", "dir", "file",
               "download", "nccl", "gpu", "gpus", "utilization", "fraction", "kv", "trust",
               "remote", "code", "revision", "hf", "token"}
#: Two-word runs too common in any prose to mean a setting.
PLAIN = {"max num", "num seqs", "max model", "model len", "log level", "model name", "served model", "api key"}


def phrases(release: str) -> dict[str, set[str]]:
    """Each phrase and the long options it comes from."""
    found: dict[str, set[str]] = {}
    for action in json.loads((HELP / f"{release}.json").read_text())["actions"]:
        for option in action["options"]:
            if not option.startswith("--"):
                continue
            words = option[2:].lower().split("-")
            while words and words[0] in SWITCH_WORDS:
                words = words[1:]
            for size in range(2, min(4, len(words)) + 1):
                for start in range(len(words) - size + 1):
                    run = words[start:start + size]
                    phrase = " ".join(run)
                    if not OTHER_WORDS & set(run) and all(len(word) > 1 for word in run) and phrase not in PLAIN:
                        found.setdefault(phrase, set()).add(option)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", nargs="+", default=["sglang-0.5.9", "vllm-0.11.0"])
    args = parser.parse_args()
    every: dict[str, set[str]] = {}
    for release in args.releases:
        for phrase, options in phrases(release).items():
            every.setdefault(phrase, set()).update(options)
    # the options a phrase is the whole of come first (they are the ones the check means), then the longer ones
    body = "\n".join(f"    {phrase!r}: {tuple(sorted(options, key=lambda o: (len(o), o)))[:4]!r},"
                     for phrase, options in sorted(every.items(), key=lambda item: (-len(item[0]), item[0])))
    OUT.write_text(
        f'"""The engines\' launch settings in the words their checks use, each with the options it comes from (made\n'
        f'by tools/setting_phrases.py from the option lists of {", ".join(args.releases)} in bot/simhost/enginehelp;\n'
        f'do not edit by hand)."""\n\n'
        f"SETTING_PHRASES: dict[str, tuple[str, ...]] = {{\n{body}\n}}\n")
    print(f"{len(every)} phrases -> {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
