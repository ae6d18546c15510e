"""What the first parser dropped without a word: drafters, moves, and any phrase nothing else understood.

A request either acts on every phrase in it, refuses with the phrase quoted, or names what it ignored
(DeployRequest.ignored, shown in the reply): nothing is dropped silently (issue 11).
"""

from __future__ import annotations

import re

from bot.models import DeployRequest
from bot.parse.frames import (
    DRAFTER,
    DRAFTER_LEAD,
    DRAFTER_NAMED_TAIL,
    LEAD_FILLERS,
    MOVE_WORDS,
    SPECULATE_NAME,
    SPECULATE_WITH,
    drafter_word_kind,
)
from bot.parse.lexicon import _MODEL_NOUNS, _OBJECT_ENDS, _QUANTITY_NOUNS
from bot.parse.names import _compact_model, _Span
from bot.parse.state import ReaderState, _Refused
from bot.parse.texts import request_text

#: Words that questions and frames use around what they ask about ("is X busy?", "get X going").
_FRAME_WORDS = frozenset(
    """
    busy idle doing going happening using hogging available up alive ready healthy serving spare capacity room
    space taken crash crashed crashing die died dying fail failed failing exit exited hang hung sure someone
    lines last first nothing here there out
    """.split()
)
#: Little words kept at the front of a quoted phrase so it reads as the person wrote it ("with flash attention").
_PHRASE_LEADS = frozenset({"with", "for", "using", "via", "and", "plus", "the", "a", "an", "our", "my", "in", "at"})
_ANY_WORD = re.compile(r"[^\W_][\w'.+/-]*")


class ExtrasMixin(ReaderState):
    """Drafters are refused, moves asked back, and whatever is left over named."""

    def read_drafters(self) -> None:
        """"with the dflash drafter", "with eagle3 drafter X", "with draft model X", "speculate with X", "with our
        drafter": a separate drafter (kind and, when named, its folder). Medusa, lookahead, n-gram and suffix
        decoding are refused as not supported yet; "without a drafter" is named as ignored."""
        for match in self.matches(SPECULATE_WITH):
            named = SPECULATE_NAME.match(self.low, match.end())
            if named is None:
                continue
            self.found.speculative.add("drafter")
            self.found.draft_models.add(self.drafter_name(named.group("name"), named.start("name")))
            self.take(match.start(), match.end())
        for match in self.matches(DRAFTER):
            if not self.free[match.start()]:
                continue  # part of an earlier phrase ("eagle3 drafter X": the word "drafter")
            lead = DRAFTER_LEAD.search(self.view()[: match.start()])
            start = lead.start() if lead else match.start()
            tail = DRAFTER_NAMED_TAIL.match(self.low[match.end() :])
            name = tail.group("name") if tail else None
            known = bool(name and self.index.by_compact.get(_compact_model(name)))
            if name and not known and (self.is_plain_word(name) or not re.search(r"[\d._-]", name)):
                name = None  # "draft model please", "our drafter now": not a folder name
            end = match.end()
            if tail and name:
                end += tail.end()
            elif tail and tail.group("noun"):
                end += tail.end("noun")
            said = self.quote(start, end)
            if self.negated(match):
                self.ignored.append(said)  # "without a drafter": none is used anyway
                self.take(start, end)
                continue
            kind = drafter_word_kind(match.group())
            if kind is None:
                raise _Refused(
                    "invalid_value",
                    f"Speculative decoding with '{said}' is not supported yet. I can use the model's own MTP heads "
                    "('with MTP'), a drafter ('with the dflash drafter', 'with eagle3 drafter NAME', 'with draft "
                    "model NAME') or none ('without MTP').",
                    self.without(start, end) + ["with MTP", "without MTP"],
                )
            if kind == "eagle":
                raise _Refused(
                    "invalid_value",
                    f"'{said}': SGLang's EAGLE is the model's own MTP heads ('with MTP'); an EAGLE-3 head is a "
                    "separate drafter: say 'with eagle3 drafter NAME' (or 'with the eagle3 drafter' for the one on "
                    "the host).",
                    self.without(start, end) + ["with MTP"],
                )
            self.found.speculative.add(kind)
            if name:
                self.found.draft_models.add(self.drafter_name(name, match.end() + tail.start("name")))
            self.take(start, end)

    def drafter_name(self, said: str, at: int) -> str:
        """The folder a drafter phrase names, as the inventory spells it (taken from the models the request names)."""
        names = self.index.by_compact.get(_compact_model(said.rsplit("/", 1)[-1]), [])
        said = self.original[at : at + len(said)]  # quoted as written
        if len(names) != 1:
            known = ", ".join(self.inventory.model_names()[:12])
            raise _Refused(
                "unknown_model" if not names else "ambiguous_model",
                f"I don't know a drafter folder '{said}'. Folders I know: {known}." if not names
                else f"'{said}' could be any of {', '.join(names)}. Which drafter?",
                [f"with draft model {n}" for n in names],
            )
        self.found.exact_models.pop(names[0], None)  # a drafter, not a second model to start
        self.take(at, at + len(said))
        return names[0]

    def without(self, start: int, end: int) -> list[str]:
        """The request with one phrase left out, when that reads as a request: what the person can send now."""
        from bot.parse.reader import parse_request  # the reader imports this module

        rest = self.original[:start] + " " + self.original[end:]
        attempt = parse_request(rest, self.inventory)
        return [request_text(attempt)] if isinstance(attempt, DeployRequest) else []

    def refuse_move(self, spans: list[_Span]) -> None:
        """"move X to Y" is a stop on one host and a start on another: ask for them one at a time."""
        models = list(self.found.exact_models) + [s.candidates[0] for s in spans if len(s.candidates) == 1]
        model = models[0] if len(models) == 1 else "MODEL"
        origin = [h for h, said in self.found.hosts.items() if re.search(rf"\bfrom\s+{re.escape(said.lower())}", self.low)]
        targets = [h for h in self.found.hosts if h not in origin]
        suggestions = [f"start {model} on {h}" for h in targets] + [f"stop {model} on {h}" for h in origin]
        raise _Refused(
            "not_understood",
            "I don't move a server from one host to another in one request: that is a start on the new host and a "
            "stop on the old one (the old one keeps serving until you stop it). Send them one at a time"
            + (f": {' then '.join(repr(s) for s in suggestions)}." if suggestions else "."),
            suggestions or ["status"],
        )

    def leftovers(self) -> list[str]:
        """Phrases nothing understood: each run of words with one that means something, quoted as written."""
        view = self.view()
        words = [(m.group().rstrip("._+/-'"), m.start()) for m in _ANY_WORD.finditer(view)]
        phrases: list[str] = []
        run: list[tuple[str, int]] = []

        def close() -> None:
            meaning = [i for i, (word, _) in enumerate(run) if self.means_something(word)]
            if meaning:
                first = meaning[0]
                while first > 0 and run[first - 1][0] in _PHRASE_LEADS:
                    first -= 1
                last = meaning[-1]
                if last + 1 < len(run) and run[last + 1][0] in _QUANTITY_NOUNS:
                    last += 1  # "in 5 minutes": the unit belongs to the number
                last_word, last_start = run[last]
                phrases.append(self.quote(run[first][1], last_start + len(last_word)))
            run.clear()

        for word, start in words:
            if run and not re.fullmatch(r"[ \-_]*", view[run[-1][1] + len(run[-1][0]) : start]):
                close()
            if word:
                run.append((word, start))
        close()
        return [p for p in phrases if p] + self.ignored

    def means_something(self, word: str) -> bool:
        if not word.isascii():
            return True  # a word in another script: we cannot say we understood it
        if word.isdigit():
            return True  # survived the stray-number check ("in 5 minutes"): still not acted on
        return not (
            self.is_plain_word(word)
            or word in LEAD_FILLERS
            or word in _FRAME_WORDS
            or word in _MODEL_NOUNS
            or word in _OBJECT_ENDS
            or word in MOVE_WORDS
        )
