"""The action: action words, phrasal verbs, questions, typos."""

from __future__ import annotations

import re

from rapidfuzz.distance import OSA

from bot.models import Action
from bot.parse.lexicon import (
    _ACTION_WORDS,
    _COMMON_VERBS,
    _LOGS_QUESTION,
    _NEGATORS,
    _NOT_LEADS,
    _OPTION_OBJECT,
    _PHRASAL,
    _PHRASAL_GAP,
    _STATUS_PHRASE,
    _STATUS_QUESTION,
    _STOPWORDS,
    _WANT_WORDS,
)
from bot.parse.names import _parts
from bot.parse.frames import LEAD_VERBS, MOVE_WORDS, STATUS_QUESTIONS, WANT_FRAME, lead_position
from bot.parse.patterns import _TOKEN
from bot.parse.state import ReaderState, _Refused
from bot.parse.texts import example_requests


class ActionMixin(ReaderState):
    """Finds what to do."""

    def read_action(self) -> Action | None:
        view = self.view()
        tokens = [(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(view)]
        strong: list[tuple[Action, bool]] = []  # (action, negated)
        used: list[tuple[int, int]] = []
        for i, (token, start, end) in enumerate(tokens):
            action = _ACTION_WORDS.get(token)
            if action is None:
                continue
            if token == "check" and self.low[end:].lstrip().startswith("out"):
                continue  # "check out" is not a status request
            strong.append((action, self.verb_negated(tokens, i)))
            used.append((start, end))
        strong += self.phrasal(tokens, used)
        for pattern in (_STATUS_PHRASE, STATUS_QUESTIONS):
            for match in pattern.finditer(self.low):
                strong.append(("status", False))
                used.append((match.start(), match.end()))
        for i, (token, start, end) in enumerate(tokens):
            if token in MOVE_WORDS and not self.verb_negated(tokens, i) and re.search(r"\b(?:to|onto)\b", self.low):
                self.moving = True  # asked back once the names are read (refuse_move)
                strong.append(("start", False))
                used.append((start, end))
        wanted = {action for action, negated in strong if not negated}
        if strong and not wanted:
            raise _Refused("not_understood", "You said not to do it, so there is nothing to do.",
                           example_requests(self.inventory)[:3])  # fmt: skip
        if not wanted:
            wanted = self.weak_action(tokens, used)
        if not wanted and self.slash_deploy:
            wanted = {"start"}  # "/deploy Qwen3.6-27B on CT129": the command itself is the verb
        for start, end in used:
            self.take(start, end)
        self.action_spans = sorted(used)
        self.start_and_stop = {"start", "stop"} <= wanted
        return _combine_actions(wanted) if wanted else None

    def verb_negated(self, tokens: list[tuple[str, int, int]], i: int) -> bool:
        previous = [t for t, _, _ in tokens[max(0, i - 2) : i]]
        if previous and previous[-1] in _NEGATORS:
            return True
        return len(previous) == 2 and previous[1] == "not" and previous[0] in _NOT_LEADS

    def phrasal(self, tokens: list[tuple[str, int, int]], used: list[tuple[int, int]]) -> list[tuple[Action, bool]]:
        found: list[tuple[Action, bool]] = []
        for i, (token, start, end) in enumerate(tokens):
            for verbs, particles, action in _PHRASAL:
                if token not in verbs:
                    continue
                for j in range(i + 1, min(len(tokens), i + 2 + _PHRASAL_GAP)):
                    particle, particle_start, particle_end = tokens[j]
                    if particle not in particles:
                        continue
                    if particle == "on" and self.before_host(particle_end):
                        continue  # "turn off the coder on rtx-box": "on" is where, not "turn on"
                    between = self.low[start:particle_end]
                    option_between = re.search(r"\b(?:mtp|spec\w*|nextn)\b", between)
                    if _OPTION_OBJECT.match(self.low[particle_end:]) or option_between:
                        break  # "turn off MTP" is an option, not an action
                    found.append((action, self.verb_negated(tokens, i)))
                    used += [(start, end), (particle_start, particle_end)]
                    break
        return found

    def weak_action(self, tokens: list[tuple[str, int, int]], used: list[tuple[int, int]]) -> set[Action]:
        """Hints used only when no word names an action: a command's verb ("put X on Y"), questions, "I need ...",
        and typos of action words."""
        marked, at = self.clause_tokens(tokens)
        for i, (token, start, end) in enumerate(tokens):
            if token in LEAD_VERBS and lead_position(marked, at[i]):
                used.append((start, end))
                return {LEAD_VERBS[token]}
        if _LOGS_QUESTION.search(self.low):
            return {"logs"}
        if _STATUS_QUESTION.search(self.low):
            return {"status"}
        wants = any(t in _WANT_WORDS for t, _, _ in tokens) or WANT_FRAME.search(self.low)
        if wants and not re.match(r"^\W*(?:do|does|did|is|are|was)\b", self.low):
            if self.found.exact_models or any(self.index.is_strong(p) for t, _, _ in tokens for p in _parts(t)):
                return {"start"}
        typos: set[Action] = set()
        for token, start, end in tokens:
            if len(token) < 4 or token in _STOPWORDS or token in _COMMON_VERBS or token in self.index.vocabulary:
                continue
            close = [(w, a) for w, a in _ACTION_WORDS.items() if len(w) >= 4 and OSA.distance(token, w) <= 1]
            if len({a for _, a in close}) > 1:  # "strat": start (swapped letters) over stats (a dropped one)
                close = [(w, a) for w, a in close if len(w) == len(token)]
            if len({a for _, a in close}) > 1:  # "statr": start (two letters swapped) over stats (one changed)
                close = [(w, a) for w, a in close if sorted(w) == sorted(token)]
            if len({a for _, a in close}) == 1:
                typos.add(close[0][1])
                used.append((start, end))
        return typos


    def before_host(self, at: int) -> bool:
        rest = self.low[at:].lstrip()
        return any(rest.startswith(said.lower()) for said in self.found.hosts.values())

    def clause_tokens(self, tokens: list[tuple[str, int, int]]) -> tuple[list[str], list[int]]:
        """The tokens with "\n" where a sentence or clause ends between two ("thanks. put X on Y"), and where
        each token landed in that list."""
        marked: list[str] = []
        at: list[int] = []
        previous_end = 0
        for token, start, end in tokens:
            if re.search(r"[.!?;:,]", self.low[previous_end:start]):
                marked.append("\n")
            at.append(len(marked))
            marked.append(token)
            previous_end = end
        return marked, at


def _combine_actions(actions: set[Action]) -> Action:
    """Several action words in one request: the one that changes something wins over status/logs."""
    if len(actions) == 1:
        return next(iter(actions))
    if "restart" in actions:
        return "restart"
    if {"start", "stop"} <= actions:
        return "restart"  # "stop X and start it again"; with two models the model check refuses it
    for action in ("start", "stop", "logs", "status"):
        if action in actions:
            return action  # type: ignore[return-value]
    raise AssertionError(actions)  # unreachable: actions is non-empty
