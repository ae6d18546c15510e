"""The engines' own argument names as Python keywords (``--limit-mm-per-prompt`` is ``limit_mm_per_prompt``), from
every captured release's parser (bot/simhost/enginehelp, tools/capture_engine_help.py): a keyword an API refuses is
an engine argument only when it is one of these."""

from __future__ import annotations

import json
import re

from bot.simhost.captures import CAPTURES


def _keywords() -> list[str]:
    names: set[str] = set()
    for path in CAPTURES.glob("*.json"):
        for action in json.loads(path.read_text()).get("actions", []):
            for option in action.get("options", []):
                if option.startswith("--") and len(option) > 4:
                    names.add(option[2:].replace("-", "_"))
    # (longest first, so that an alternation never stops at a shorter name the longer one begins with)
    return sorted(names, key=lambda name: (-len(name), name))


_NAMES = _keywords()
#: The names, for a look-up (a field a check names is a flag only when it is one of these) ...
ENGINE_KEYWORD_SET = frozenset(_NAMES)
#: ... and as an alternation, for rule patterns.
ENGINE_KEYWORDS = "|".join(re.escape(name) for name in _NAMES)
