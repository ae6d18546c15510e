"""The options a request may carry: port, context, GPUs, tp, quantization, engine, MTP."""

from __future__ import annotations

import re

from rapidfuzz.distance import OSA

from planners.engines import registry

from bot.parse.lexicon import QUANTIZATION_METHODS, _NUMBER_WORDS, _ORDINALS, _STOPWORDS
from bot.parse.names import _parts
from bot.parse.patterns import (
    _ALL_GPUS,
    _CONTEXT,
    _GPU_COUNT_AND_LIST,
    _GPU_LIST_RE,
    _GPU_ORDINAL,
    _KV_CACHE,
    _PORT,
    _QUANT_BARE,
    _QUANT_BITS,
    _QUANT_KEYWORD,
    _REUSE,
    _SCOPE_ALL,
    _SPECULATIVE,
    _TP,
    engine_patterns,
    quant_name,
)
from bot.parse.refusals import _engine
from bot.parse.state import ReaderState, _Refused


class OptionsMixin(ReaderState):
    """Reads options by their keywords, taking the characters it understood."""

    def read_options(self) -> None:
        self.read_ports()
        self.read_context()
        self.read_gpus()
        self.read_tp()
        self.read_quantization()
        self.read_engine()
        self.read_speculative()
        for match in self.matches(_REUSE):
            self.found.reuse_last = True
            self.take(match.start(), match.end())
        for match in self.matches(_SCOPE_ALL):
            self.found.scope_all = True
            self.take(match.start(), match.end())

    def read_ports(self) -> None:
        for pattern in _PORT:
            for match in self.matches(pattern):
                port = int(match.group("n"))
                if not 1024 <= port <= 65535:
                    raise _Refused(
                        "invalid_value",
                        f"Port {port} is out of range: use 1024-65535 (ports below 1024 need root).",
                        ["port 30001"],
                    )
                self.found.ports.add(port)
                self.take(match.start(), match.end())

    def read_context(self) -> None:
        for pattern in _CONTEXT:
            for match in self.matches(pattern):
                said = self.quote(match.start(), match.end())
                if len(match.group("num")) > 12:
                    raise _Refused("invalid_value", f"'{said[:40]}' is more context than any model has.",
                                   ["128k context"])  # fmt: skip
                multiplier = {"k": 1024, "m": 1024 * 1024}.get(match.group("unit") or "", 1)
                tokens = int(round(float(match.group("num")) * multiplier))
                if tokens <= 0:
                    raise _Refused("invalid_value", f"'{said}': the context length must be more than zero.",
                                   ["32k context", "context 8192"])  # fmt: skip
                if tokens > 10_000_000:
                    raise _Refused("invalid_value", f"'{said}' is more context than any model has (max 10M tokens).",
                                   ["128k context"])  # fmt: skip
                self.found.contexts.add(tokens)
                self.take(match.start(), match.end())

    def gpu_indices(self, listed: str, said: str) -> list[int]:
        """"4,5,6,7" / "0-3" / "0 to 3" / "1 and 2" -> sorted indices."""
        indices: list[int] = []
        items = re.findall(r"\d+|-|to|through|thru", listed)
        i = 0
        while i < len(items):
            first = int(items[i])
            if i + 2 < len(items) and not items[i + 1].isdigit():
                last = int(items[i + 2])
                if last < first:
                    raise _Refused("invalid_value", f"'{said}': a GPU range runs upwards, like 'gpus 0-3'.",
                                   ["gpus 0-3"])  # fmt: skip
                indices += range(first, last + 1)
                i += 3
            else:
                indices.append(first)
                i += 1
        return sorted(set(indices))

    def read_gpus(self) -> None:
        for match in self.matches(_GPU_COUNT_AND_LIST):
            said = self.quote(match.start(), match.end())
            self.found.tps.add(self.count(match.group("n"), said))
            self.found.gpus.append(self.gpu_indices(match.group("list"), said))
            self.take(match.start(), match.end())
        for match in self.matches(_GPU_LIST_RE):
            self.refuse_gpu_as_host(match)
            self.found.gpus.append(self.gpu_indices(match.group("list"), self.quote(match.start(), match.end())))
            self.take(match.start(), match.end())
        for match in self.matches(_GPU_ORDINAL):
            self.found.gpus.append([_ORDINALS[match.group("ord")]])
            self.take(match.start(), match.end())

    def refuse_gpu_as_host(self, match: re.Match[str]) -> None:
        """"on gpu7" with no host named and no host called gpu7: a host name we don't know, not GPU 7 of no host."""
        said = self.quote(match.start(), match.end())
        glued = re.fullmatch(r"(?:gpu|card|device)\d+", said.lower())
        after_preposition = re.search(r"(?:\b(?:on|onto|at|to)\s+(?:the\s+)?|@)$", self.low[: match.start()])
        if not glued or not after_preposition or self.found.hosts:
            return
        hosts = list(self.inventory.hosts)
        index = re.sub(r"\D", "", said)
        raise _Refused(
            "unknown_host",
            f"I don't know a host called '{said}'. Hosts I know: {', '.join(hosts)}. "
            f"If you meant GPU {index}, name the host too, like 'on {hosts[0] if hosts else 'HOST'} gpu {index}'.",
            [f"status {h}" for h in hosts[:3]] + [f"on {h} gpu {index}" for h in hosts[:2]],
        )

    def count(self, said_number: str, said: str) -> int:
        value = _NUMBER_WORDS.get(said_number) or int(said_number)
        if not 1 <= value <= 64:
            raise _Refused("invalid_value", f"'{said}': tensor parallel size must be between 1 and 64.",
                           ["tp 2", "on both GPUs"])  # fmt: skip
        return value

    def read_tp(self) -> None:
        for pattern in _TP:
            for match in self.matches(pattern):
                self.found.tps.add(self.count(match.group("n"), self.quote(match.start(), match.end())))
                self.take(match.start(), match.end())
        for match in self.matches(_ALL_GPUS):
            if match.group("n"):
                self.found.tps.add(self.count(match.group("n"), self.quote(match.start(), match.end())))
            else:
                self.found.tp_all_gpus = True
            self.take(match.start(), match.end())

    def read_quantization(self) -> None:
        for match in self.matches(_KV_CACHE):
            raise _Refused(
                "invalid_value",
                f"'{self.quote(match.start(), match.end())}': the KV-cache dtype is chosen by the planner and cannot "
                "be set from a request. Weight quantization can: 'fp8', 'awq', 'gptq', ...",
                ["quantization fp8"],
            )
        for match in self.matches(_QUANT_BITS):
            bits = match.group("bits")
            raise _Refused(
                "invalid_value",
                f"'{self.quote(match.start(), match.end())}' could be several quantization methods; name one.",
                [f"quantization {m}" for m in ("awq", "gptq", "bitsandbytes", f"int{bits}")
                 if m in QUANTIZATION_METHODS],  # fmt: skip
            )
        for match in self.matches(_QUANT_KEYWORD):
            value = match.group("v")
            name = quant_name(value)
            if name in QUANTIZATION_METHODS:
                self.found.quantizations.add(name)
                self.take(match.start(), match.end())
            elif not self.is_plain_word(value) and not any(self.index.is_strong(p) for p in _parts(value)):
                raise _Refused(
                    "invalid_value",
                    f"'{value}' is not a quantization method I know. Known: {', '.join(sorted(QUANTIZATION_METHODS))}.",
                    ["quantization fp8", "quantization awq"],
                )
        for match in self.matches(_QUANT_BARE):
            self.found.quantizations.add(quant_name(match.group("v")))
            self.take(match.start(), match.end())
        if len(self.found.quantizations) > 1:
            raise _Refused(
                "invalid_value",
                f"Two quantization methods ({', '.join(sorted(self.found.quantizations))}); which one?",
                [f"quantization {q}" for q in sorted(self.found.quantizations)],
            )

    def read_engine(self) -> None:
        engine_word, engine_switch = engine_patterns()
        for match in self.matches(engine_switch):
            self.found.engines_refused.add(_engine(match.group("old")))
            self.found.engines_wanted.add(_engine(match.group("new")))
            self.take(match.start(), match.end())
        for match in self.matches(engine_word):
            engine = _engine(match.group("e"))
            target = self.found.engines_refused if self.negated(match) else self.found.engines_wanted
            target.add(engine)
            self.take(match.start(), match.end())
        for word in self.words():  # typos: "vlllm", "sglagn"
            if len(word.text) >= 4 and word.text.isalpha() and word.text not in _STOPWORDS:
                close = [e for e in registry.names() if OSA.distance(word.text, e) <= 1]
                if len(close) == 1 and word.text not in self.index.vocabulary:
                    self.found.engines_wanted.add(close[0])
                    self.take(word.start, word.end)

    def read_speculative(self) -> None:
        for match in self.matches(_SPECULATIVE):
            said = match.group("s")
            negated = self.negated(match, look_after=True)
            if said.startswith("eagle") and not negated:
                raise _Refused(
                    "invalid_value",
                    "EAGLE needs a separate draft model, which I can't set up from a request. "
                    "The model's own MTP heads I can: say 'with MTP'.",
                    ["with MTP"],
                )
            generic = said.startswith("spec")  # "spec decoding": with a drafter named, it is the drafter's
            if not (generic and not negated and self.found.speculative - {"mtp", "none"}):
                self.found.speculative.add("none" if negated else "mtp")
            self.take(match.start(), match.end())
        kinds = self.found.speculative - ({"none"} if self.found.speculative - {"mtp", "none"} else set())
        if len(kinds - {"mtp", "none", "drafter"}) == 1:
            kinds = kinds - {"drafter"}  # "eagle3 ... with drafter X": one drafter, its kind named
        if kinds == {"mtp", "none"}:
            raise _Refused("invalid_value", "You asked both for MTP and for no speculative decoding; which one?",
                           ["with MTP", "without MTP"])  # fmt: skip
        if len(kinds) > 1:
            shown = " and ".join(sorted(kinds))
            raise _Refused("invalid_value", f"You asked for two kinds of speculative decoding ({shown}); which one?",
                           ["with MTP", "with the dflash drafter", "without MTP"])  # fmt: skip
