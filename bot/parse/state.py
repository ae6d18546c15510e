"""What a reader holds while it reads: the text, what is understood so far, and the shared helpers."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from bot.inventory import Inventory
from bot.models import Action, ParseError
from bot.parse.lexicon import _ACTION_WORDS, _COMMON_VERBS, _HOST_NOUNS, _QUANTITY_NOUNS, _STOPWORDS
from bot.parse.names import _ModelIndex, _Word, _compact_host
from bot.parse.patterns import _NEGATED_AFTER, _NEGATED_BEFORE, _WORD


_T = TypeVar("_T")


class _Refused(Exception):
    """Internal: a step found the request cannot be acted on. parse_request turns it into its ParseError."""

    def __init__(self, kind: str, message: str, suggestions: Iterable[str] = ()) -> None:
        super().__init__(message)
        self.error = ParseError(kind=kind, message=message, suggestions=list(dict.fromkeys(suggestions))[:6])


@dataclass
class _Found:
    """What has been understood so far."""

    hosts: dict[str, str] = field(default_factory=dict)  # host -> the words that named it
    exact_models: dict[str, str] = field(default_factory=dict)  # model -> the words that named it
    ports: set[int] = field(default_factory=set)
    contexts: set[int] = field(default_factory=set)
    tps: set[int] = field(default_factory=set)
    tp_all_gpus: bool = False  # "on both GPUs" / "on all GPUs": the host's GPU count
    gpus: list[list[int]] = field(default_factory=list)
    quantizations: set[str] = field(default_factory=set)
    engines_wanted: set[str] = field(default_factory=set)
    engines_refused: set[str] = field(default_factory=set)
    speculative: set[str] = field(default_factory=set)
    draft_models: set[str] = field(default_factory=set)  # drafter folders a drafter phrase named
    reuse_last: bool = False
    scope_all: bool = False


class ReaderState:
    """The text being read, with what each step understood blanked out, and what was found."""

    def __init__(self, text: str, inventory: Inventory) -> None:
        self.raw = text
        self.inventory = inventory
        self.index = _ModelIndex.build(inventory)
        self.found = _Found()
        self.slash_deploy = False
        self.original = ""
        self.low = ""
        self.free = bytearray()
        self._view: str | None = None
        self.action_spans: list[tuple[int, int]] = []
        self.start_and_stop = False  # "stop X and start it again"
        self.moving = False  # "move X to Y": asked back once the names are read
        self.ignored: list[str] = []  # phrases read but not acted on, named in the reply

    def view(self) -> str:
        """The text with what is understood blanked out (NUL), so later patterns cannot match across it."""
        if self._view is None:
            self._view = "".join(c if f else "\x00" for c, f in zip(self.low, self.free))
        return self._view

    def take(self, start: int, end: int) -> None:
        self.free[start:end] = bytes(end - start)
        self._view = None

    def matches(self, pattern: re.Pattern[str]) -> list[re.Match[str]]:
        """Matches in the not-yet-understood text; the caller takes what it uses."""
        return list(pattern.finditer(self.view()))

    def words(self) -> list[_Word]:
        words = []
        for match in _WORD.finditer(self.view()):
            text = match.group().rstrip("._+/~-")
            if text:
                words.append(_Word(text, match.start(), match.start() + len(text)))
        return words

    def joinable(self, left: _Word, right: _Word) -> bool:
        """Two words are one name only with nothing but spaces or separators between them."""
        return bool(re.fullmatch(r"[ \-_]*", self.view()[left.end : right.start]))

    def quote(self, start: int, end: int) -> str:
        return self.original[start:end].strip()

    def is_plain_word(self, word: str) -> bool:
        return (
            word in _STOPWORDS
            or word in _COMMON_VERBS
            or word in _ACTION_WORDS
            or word in _QUANTITY_NOUNS
            or word in _HOST_NOUNS
            or len(word) < 2
        )

    def verbish(self, word: str) -> bool:
        return word in _COMMON_VERBS or word in _ACTION_WORDS

    def raise_unknown_host(self, said: str) -> None:
        hosts = list(self.inventory.hosts)
        close = difflib.get_close_matches(_compact_host(said), [_compact_host(h) for h in hosts], n=3, cutoff=0.5)
        names = [h for h in hosts if _compact_host(h) in close] or hosts
        raise _Refused(
            "unknown_host",
            f"I don't know a host called '{said}'. Hosts I know: {', '.join(hosts)}.",
            [f"status {h}" for h in names],
        )

    def suggest(self, action: Action | None, model: str | None, host: str | None) -> str:
        return " ".join(p for p in (action or "start", model or "", f"on {host}" if host else "") if p)

    def negated(self, match: re.Match[str], look_after: bool = False) -> bool:
        before = self.low[max(0, match.start() - 40) : match.start()]
        if _NEGATED_BEFORE.search(before):
            return True
        return look_after and bool(_NEGATED_AFTER.match(self.low[match.end() : match.end() + 20]))
