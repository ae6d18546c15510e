"""Model and host names taken apart for matching what people type."""

from __future__ import annotations

import re
from dataclasses import dataclass

from rapidfuzz.distance import OSA

from bot.inventory import Inventory
from bot.parse.lexicon import _ACTION_WORDS, _COMMON_VERBS, _IGNORABLE_PARTS, _OTHER_FAMILIES, _STOPWORDS
from bot.parse.frames import GENERIC_PARTS, PART_SYNONYMS
from bot.parse.patterns import _PART, _SIZE_PART, _VERSION_PART

_LETTER_NUMBER = re.compile(r"[a-uw-z]\d+")


def _compact_model(name: str) -> str:
    return re.sub(r"[^a-z0-9.]", "", name.lower())


def _compact_host(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _parts(text: str) -> list[str]:
    """'Qwen3.6-27B' -> ['qwen', '3.6', '27b']; 'gemma-3-27b-it' -> ['gemma', '3', '27b', 'instruct']."""
    parts: list[str] = []
    for piece in re.split(r"[^a-z0-9.]+", text.lower()):
        for part in _PART.findall(piece.strip(".")):
            parts.append(PART_SYNONYMS.get(part, part))
    return parts


def _is_size(part: str) -> bool:
    return bool(_SIZE_PART.fullmatch(part))


def _is_version(part: str) -> bool:
    return bool(_VERSION_PART.fullmatch(part))


def _part_matches(said: str, part: str) -> bool:
    """'3' matches '3.1' (a family version), and 'v3'; otherwise parts match exactly."""
    if said == part:
        return True
    if said.isdigit() or re.fullmatch(r"\d+(?:\.\d+)+", said):
        return part.startswith(said + ".") or part == "v" + said
    if len(said) >= 4 and said.isalpha() and part.isalpha() and len(part) > len(said):
        return part.startswith(said) or part.endswith(said)  # "gemma" in "medgemma" (only when nothing exact)
    return False


@dataclass(frozen=True)
class _ModelIndex:
    """The inventory's model names taken apart, for matching what people type."""

    names: list[str]
    parts: dict[str, list[str]]
    by_compact: dict[str, list[str]]
    vocabulary: frozenset[str]  # every alphabetic part of any name
    families: frozenset[str]  # the first alphabetic part of each name: qwen, llama, gemma...

    @classmethod
    def build(cls, inventory: Inventory) -> "_ModelIndex":
        every = inventory.model_names()
        # a drafter folder is named in full ("with draft model X"), never meant by a loose name ("qwen3.6")
        drafters = inventory.drafter_names()
        names = [name for name in every if name not in drafters]
        parts = {name: _parts(name) for name in names}
        by_compact: dict[str, list[str]] = {}
        for name in every:
            by_compact.setdefault(_compact_model(name), []).append(name)
        # Words of names, and a letter glued to a number that is no version ("R1", "K2"): said as they are.
        vocabulary = frozenset(p for ps in parts.values() for p in ps if p.isalpha() or _LETTER_NUMBER.fullmatch(p))
        families = frozenset(next((p for p in ps if p.isalpha()), "") for ps in parts.values()) - {""}
        return cls(names, parts, by_compact, vocabulary, families)

    def canonical(self, part: str) -> str:
        """A typo of a name part becomes that part ("qwne" -> "qwen"), when exactly one part is that close."""
        if not part.isalpha() or part in self.vocabulary or len(part) < 4:
            return part
        if part in _STOPWORDS or part in _OTHER_FAMILIES or part in _ACTION_WORDS or part in _COMMON_VERBS:
            return part
        # Only towards family names and filler parts: a distinctive word is too often one letter from an English
        # one ("demo" / "nemo", "order" / "coder"), so it must be written as it is.
        close = [
            v
            for v in self.vocabulary
            if len(v) >= 4 and OSA.distance(part, v) <= 1 and (v in self.families or not self.is_distinctive(v))
        ]
        return close[0] if len(close) == 1 else part

    def is_strong(self, part: str) -> bool:
        """A part that on its own says 'this is a model name': a family, a size (27b), active params (a3b), or a
        word of some folder's name that is no ordinary word ("math", "vl", "distill", "coder")."""
        return (
            part in self.families
            or part in _OTHER_FAMILIES
            or _is_size(part)
            or self.is_distinctive(part)
            or self.is_inside_family(part)
        )

    def is_inside_family(self, part: str) -> bool:
        """"gemma" for a medgemma folder, "smol" for SmolLM3: a family written glued to another word."""
        if len(part) < 4 or not part.isalpha() or part in _STOPWORDS or part in _COMMON_VERBS:
            return False
        return any(f != part and (f.startswith(part) or f.endswith(part)) for f in self.families)

    def names_alone(self, part: str) -> bool:
        """A part that says "model name" by what it is (family, size), not only by being in some folder's name."""
        return part in self.families or part in _OTHER_FAMILIES or _is_size(part) or self.is_inside_family(part)

    def is_distinctive(self, part: str) -> bool:
        """"math" in Qwen2.5-Math-7B-Instruct names that folder; "instruct", "it" or "small" name nothing."""
        return (
            part in self.vocabulary
            and len(part) >= 2
            and part not in GENERIC_PARTS
            and part not in _STOPWORDS
            and part not in _ACTION_WORDS
            and part not in _COMMON_VERBS
        )

    def is_known(self, part: str) -> bool:
        return (
            part in self.vocabulary
            or part in _IGNORABLE_PARTS
            or _is_version(part)
            or _is_size(part)
            or part in _OTHER_FAMILIES
        )

    def candidates(self, said: list[str]) -> tuple[list[str], list[str]]:
        """Models whose parts include every part said (exact matches preferred), and the parts no model has."""
        said = [p for p in said if p not in _IGNORABLE_PARTS]
        foreign = [p for p in said if not any(_part_matches(p, q) for ps in self.parts.values() for q in ps)]
        if foreign:
            return [], foreign
        exact = [n for n in self.names if all(p in self.parts[n] for p in said)]
        if exact:
            return exact, []
        loose = [n for n in self.names if all(any(_part_matches(p, q) for q in self.parts[n]) for p in said)]
        return loose, []


@dataclass
class _Word:
    text: str
    start: int
    end: int


@dataclass
class _Span:
    """A run of words that reads as (part of) a model name."""

    text: str
    start: int
    end: int
    candidates: list[str]
    foreign: list[str]
    #: Named only by distinctive words ("math", "next"): no family, no size. Such a span gives way to a stronger
    #: name it does not agree with ("start qwen3.6-27b on ct129 next week" is not Qwen3-Next).
    weak: bool = False


def _looks_like_host(word: str) -> bool:
    """Letters with digits, or a hyphenated name: "h200", "ct-131", "gpu-box-9"."""
    return bool(re.search(r"\d", word) and re.search(r"[a-z]", word.lower())) or "-" in word


def _leading_segments(host: str) -> set[str]:
    """"h100-01" -> {"h100"}; "gpu-box-3" -> {"gpu", "gpubox"}: the host named by its first segments."""
    segments = re.split(r"[-_.]", host.lower())
    return {_compact_host("".join(segments[:k])) for k in range(1, len(segments))}
