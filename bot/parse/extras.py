"""What the first parser dropped without a word: drafters, moves, and any phrase nothing else understood.

A request either acts on every phrase in it, refuses with the phrase quoted, or names what it ignored
(DeployRequest.ignored, shown in the reply): nothing is dropped silently (issue 11).
"""

from __future__ import annotations

import re

from bot.models import DeployRequest
from bot.parse.frames import DRAFTER, DRAFTER_LEAD, DRAFTER_TAIL, LEAD_FILLERS, MOVE_WORDS
from bot.parse.lexicon import _MODEL_NOUNS, _OBJECT_ENDS, _QUANTITY_NOUNS
from bot.parse.names import _Span
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

    def refuse_drafters(self) -> None:
        """"with the dflash drafter", "draft model X", "eagle3": a separate draft model is not supported yet."""
        for match in self.matches(DRAFTER):
            lead = DRAFTER_LEAD.search(self.view()[: match.start()])
            start = lead.start() if lead else match.start()
            tail = DRAFTER_TAIL.match(self.low[match.end() :])
            end = match.end() + (tail.end() if tail else 0)
            said = self.quote(start, end)
            if self.negated(match):
                self.ignored.append(said)  # "without a drafter": none is used anyway
                self.take(start, end)
                continue
            raise _Refused(
                "invalid_value",
                f"Speculative decoding with a separate draft model ('{said}') is not supported yet. "
                "I can use the model's own MTP heads ('with MTP') or none ('without MTP').",
                self.without(start, end) + ["with MTP", "without MTP"],
            )

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
