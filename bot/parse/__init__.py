"""Free text from Slack or the terminal -> DeployRequest, or a ParseError that says what to write instead.

Pure (no I/O) and resolved against an Inventory: a request only ever holds inventory names and validated numbers.
The text never goes near a shell; text that *looks* like shell syntax is refused (unsafe_input) so nobody is left
wondering what became of their `; rm -rf /`.

How a request is read. Each step marks the characters it understood, so later steps only see the rest:
  1. normalise: NFKC, every dash and invisible character, Slack markup (mentions, links, *bold*, `code`,
     ~struck~, smart quotes, entities); refuse shell syntax;
  2. exact names in any case and separators: model folders ("qwen3.6 27b") and hosts ("ct-129", "on the H100 box");
     a word that is a host's name is that host, never a GPU index ("on gpu3" with a host gpu3);
  3. drafters ("with the dflash drafter") are refused as not yet supported; options by their keywords: tp 4,
     port 8001, gpus 0-3, 32k context, fp8, vllm, MTP / no MTP, same as before;
  4. the action: synonyms, phrasal verbs ("spin it up"), a command's verb ("put X on Y", "swap to X"), host
     questions ("who's using Y?"), typos ("strat"); "move X to Y" is asked back as a start and a stop;
  5. partial model names ("the 8b llama", "qwen3-next", or one distinctive word: "the math model"), matched part
     by part, never guessing between two;
  6. what is left over: an unknown host after "on", an unknown model where the model belongs, a stray number;
     any other phrase nothing understood is named in DeployRequest.ignored, which the reply shows.

Modules, one step each: normalise (Slack markup, shell syntax), lexicon (words), frames (command verbs, questions,
drafters), patterns (options), names (model and host names taken apart), state (what a reader holds), reader (the
order of the steps, exact names), options, action, resolve (partial model names), refusals (leftovers, the request
built), extras (drafters, moves, ignored phrases), texts (request_text, help).
"""

from __future__ import annotations

from bot.inventory import Inventory, InventoryHost
from bot.parse.lexicon import MAX_REQUEST_CHARS, QUANTIZATION_METHODS
from bot.parse.reader import parse_request
from bot.parse.texts import example_requests, help_text, is_help_request, request_text

__all__ = [
    "Inventory",
    "InventoryHost",
    "MAX_REQUEST_CHARS",
    "QUANTIZATION_METHODS",
    "example_requests",
    "help_text",
    "is_help_request",
    "parse_request",
    "request_text",
]
