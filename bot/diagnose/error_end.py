"""The tail's own end as evidence: a start-up that never reached the server and ends on error-shaped lines is a crash
(``error_shaped_end``), and SGLang's warm-up request refused after its HTTP side came up (``warmup_refusal_end``),
so a short fragment without an exit code is never called healthy or "still starting"."""

from __future__ import annotations

import re

from bot.diagnose.health import Health
from bot.diagnose.optional import OPTIONAL_IMPORT
from bot.diagnose.rules import DEATH_SIGNS, ERROR_SHAPED
from bot.diagnose.types import Finding, LogLine

END_LINES = 6


#: The source line Python prints under a frame for a failed assert: only a traceback shows it
#: (vllm-project/vllm#18906, a paste of that one line).
_ASSERT_SOURCE = re.compile(r"^\s{0,12}assert [\w.(\[]")


def error_shaped_end(lines: list[LogLine], health: Health) -> Finding | None:
    """A tail that never showed the server alive and ends on error-shaped lines: a crash (``other``, its lines
    quoted), so a short fragment without an exit code is never called healthy."""
    if health.alive_pos >= 0 or health.http_up is not None or health.listening is not None:
        return None
    last = [(pos, line) for pos, line in enumerate(lines) if line.text][-END_LINES:]
    shaped = [(pos, line) for pos, line in last if DEATH_SIGNS.search(line.text) or _ASSERT_SOURCE.search(line.text) or (
        line.level not in ("DEBUG", "INFO", "WARNING") and ERROR_SHAPED.search(line.text)
        and not OPTIONAL_IMPORT.search(line.text))]
    if not shaped:
        return None
    pos, decisive = shaped[-1]
    return Finding(category="other", confidence=0.3, decisive=decisive, pos=pos,
                   support=[line for _, line in shaped[-3:-1]],
                   cause=f"the start-up never reached the server and the log ends on an error: {decisive.text[:160]}")


#: How a failed request's reason reads when the engine logs it as a plain line (SGLang logs its scheduler's
#: refusals without a level: "Bidirectional attention for image tokens requires TritonAttnBackend.").
_REFUSAL_WORDS = re.compile(r"\b(?:requires?|not supported|unsupported|not implemented|cannot|can't|failed to)\b",
                            re.IGNORECASE)


def warmup_refusal_end(lines: list[LogLine], health: Health) -> Finding | None:
    """SGLang's HTTP side is up, the warm-up request has not come back (no ready line, no decode), and the tail ends on
    a refusal printed without a level: the warm-up request failed (sgl-project/sglang#28171). Modest: the server may
    have gone on after the tail was cut."""
    if health.http_up is None or health.ready is not None or health.decode is not None:
        return None
    last = next(((pos, line) for pos, line in reversed(list(enumerate(lines))) if line.text.strip()), None)
    if last is None or last[0] in health.routine or last[1].level in ("DEBUG", "INFO") \
            or not _REFUSAL_WORDS.search(last[1].text):
        return None
    pos, decisive = last
    return Finding(category="other", confidence=0.35, decisive=decisive, pos=pos,
                   cause=f"the HTTP server was up but the warm-up request failed: {decisive.text[:160]}")
