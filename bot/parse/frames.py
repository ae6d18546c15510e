"""Everyday frames beyond the action words: imperative verbs ("put X on Y", "swap to X"), moves, drafters.

Why separate lists: words like "put", "load", "host" or "switch" are actions only where a command starts
("put the gemma on lab2"); elsewhere they are ordinary words ("what's the load on lab2", "status of host gpu3"),
so they are read only in that position and only when no action word says more.
"""

from __future__ import annotations

import re

from bot.models import Action

#: Verbs that name an action only at the start of a command (after politeness), never in the middle of one.
LEAD_VERBS: dict[str, Action] = {
    **dict.fromkeys(["put", "load", "host", "swap", "switch", "stand", "bring", "fire", "spin", "give"], "start"),
    **dict.fromkeys(["cycle", "kick", "refresh"], "restart"),
    **dict.fromkeys(["drop", "free", "evict", "retire", "remove", "pull", "unserve"], "stop"),
}
#: Words that may come before a command's verb: "hey team, could someone please just put ...".
LEAD_FILLERS = frozenset(
    """
    please pls plz kindly could can would will you u we someone somebody anyone pretty hey hi hello yo ok okay
    so and then now just also quickly go ahead i we'd i'd like to need want wanna team folks guys bot deploybot
    mind let's lets us me gonna going can't cant
    """.split()
)
#: "move X to Y": a stop on one host and a start on another, which one request does not do.
MOVE_WORDS = frozenset({"move", "moving", "migrate", "migrating", "relocate", "transfer", "shift", "rehost"})
#: Parts of a folder name that say nothing about which model it is ("Instruct", "it", "v0.1").
GENERIC_PARTS = frozenset(
    """
    instruct instruction chat base hf it model preview latest release final sft dpo rl pt fp bf gguf awq gptq
    int exl exl2 mlx onnx hqq bnb v x e a b k m
    """.split()
)
#: Said-side and name-side spellings of the same part: "vision" is what people call a "-VL-" folder.
PART_SYNONYMS = {
    "it": "instruct",
    "vision": "vl",
    "visual": "vl",
    "distilled": "distill",
    "distil": "distill",
    "maths": "math",
    "coding": "coder",
    "code": "coder",
}
#: Asking for a model as one asks for anything: "I'd like X on Y", "could we have X on Y".
WANT_FRAME = re.compile(
    r"\b(?:i'd|we'd|id|i\s+would|we\s+would)\s+(?:like|love)\b|\b(?:can|could|may)\s+(?:we|i|you)\s+(?:have|get|grab)\b"
)
#: Questions about a host: they ask for status as clearly as "status" does.
STATUS_QUESTIONS = re.compile(
    r"\b(?:who(?:'s|s|\s+is)\s+(?:using|on|hogging|running\s+on)"
    r"|(?:any|some)\s+(?:free|idle|available|open|spare)\s+(?:gpus?|cards?|capacity|room|space)"
    r"|any\s+(?:gpus?|cards?|capacity|room)\s+(?:free|available|idle|open|left)"
    r"|(?:which|what|how\s+many)\s+gpus?\s+(?:are\s+|is\s+)?(?:free|idle|available|busy|in\s+use|used|taken)"
    r"|how\s+busy|how\s+loaded"
    r"|what(?:'s|s|\s+is)\s+(?:the\s+)?(?:status|state)\b"
    r"|what(?:'s|s|\s+is)\s+(?:going\s+on|happening|deployed|serving)"
    r"|is\s+(?:there\s+)?anything\s+(?:running|up|deployed|on|live|serving))"
)
#: Speculative decoding with a separate drafter (issue 16), and the methods still refused by name: read, never dropped.
DRAFTER = re.compile(
    r"(?<![a-z0-9._-])(?:d?flash[-_ ]?draft\w*|draft(?:er|ers|ing)?|dflash|medusa\w*|eagle[-_ ]?\d?|lookahead"
    r"|n[-_ ]?gram(?:\s+spec\w*)?|suffix[-_ ]decoding)(?![a-z0-9_])"
)
#: Where a drafter phrase starts: "with the ...", "using our ...".
DRAFTER_LEAD = re.compile(
    r"(?:(?:\b(?:with|using|via|plus|and|without|no|not)|w/o|w/)\s+(?:(?:the|our|a|an|its|my|some)\s+)?"
    r"(?:(?!(?:with|using|via|plus|and|w)\b)[a-z][a-z0-9.-]*\s+){0,2}|\b(?:the|our|a|an|its|my|some)\s+)?$"
)  # read on the text not yet understood, so a host or model name before it is never part of the phrase
#: "speculate with X": X is a drafter folder, its kind from its config.
SPECULATE_WITH = re.compile(r"\bspeculat(?:e|ing)\s+(?:with|using|via)\s+(?:the\s+)?")
SPECULATE_NAME = re.compile(r"\s*(?P<name>[a-z0-9][a-z0-9._/-]*[a-z0-9])")
#: The drafter word's noun and name: "eagle3 drafter foo", "draft model Qwen3-0.6B" (groups noun, name).
DRAFTER_NAMED_TAIL = re.compile(
    r"^(?:[\s:=-]*(?P<noun>model|heads|head|drafter))?"
    r"(?:[\s:=]+(?!(?:on|at|to|with|and|using|please|pls|plz|thanks|thx|ty|asap|now|too|instead)\b)"
    r"(?P<name>[a-z0-9][a-z0-9._/-]*[a-z0-9]))?"
)


def drafter_word_kind(word: str) -> str | None:
    """dflash | eagle3 | draft | drafter (any kind: its config decides) | eagle (MTP's name in SGLang); None for the
    methods not supported yet (medusa, lookahead, n-gram, suffix decoding)."""
    compact = re.sub(r"[-_ ]", "", word.lower())
    if "flash" in compact:
        return "dflash"
    if compact.startswith("eagle"):
        return "eagle3" if compact.endswith("3") else "eagle"
    if compact in ("draft", "drafting"):
        return "draft"
    if compact in ("drafter", "drafters"):
        return "drafter"
    return None


#: What may follow the drafter word as part of the same phrase: "drafter foo", "draft model Qwen2.5-0.5B".
DRAFTER_TAIL = re.compile(
    r"^(?:[\s:=-]*(?:model|head|heads|drafter))?"
    r"(?:[\s:=]+(?!(?:on|at|to|with|and|using|please|pls|plz|thanks|thx|ty|asap|now|too|instead)\b)[a-z0-9][a-z0-9._/-]*)?"
)


def lead_position(tokens: list[str], i: int) -> bool:
    """Is tokens[i] where a command's verb goes: first, or after only fillers since a clause started?"""
    j = i - 1
    while j >= 0 and tokens[j] in LEAD_FILLERS:
        j -= 1
    return j < 0 or tokens[j] == "\n"
