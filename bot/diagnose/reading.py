"""The tail as the diagnoser reads it: lines in time order, without launcher prefixes, traceback source lines marked,
a console's hard wraps joined again, and the next line when a message goes on there.

``prepare(log_tail)`` is step 1 of ``bot.diagnose.match``; ``continued(lines, pos)`` gives the phrase rules a
message a terminal or a paste wrapped onto two lines.
"""

from __future__ import annotations

import re

from bot.diagnose.paste import undo_paste
from bot.diagnose.rules import ERROR_SHAPED, GENERIC_ERROR
from bot.diagnose.types import LogLine
from bot.logevents import LAUNCH_START
from bot.lognorm import normalize_line

FRAME = re.compile(r'^File "')
_CODE_START = re.compile(r"^(?:raise|assert)\b|^[~^\s]+$")


def _split(log_tail: str) -> list[tuple[int, str]]:
    """(line number in the tail as given, line), with a whole paste's wrapping undone (bot/diagnose/paste.py)."""
    lines = undo_paste(log_tail.replace("\r\n", "\n"))
    if lines and lines[-1][1] == "":
        lines.pop()
    return lines


def _newest_first(lines: list[LogLine], stamps: list[tuple[str, str] | None]) -> bool:
    """A log pasted newest-first: timestamps mostly decrease, or tracebacks read upside down."""
    earlier = later = 0
    previous: tuple[str, str] | None = None
    for stamp in stamps:
        if stamp is None:
            continue
        if previous is not None and previous[0] == stamp[0] and previous[1] != stamp[1]:
            if stamp[1] < previous[1]:
                earlier += 1
            else:
                later += 1
        previous = stamp
    if earlier + later >= 2:
        return earlier > later
    # No usable clock: a traceback's header comes before its frames, its exception line after them.
    upright = upside_down = 0
    texts = [line.text for line in lines if line.text]
    for i, text in enumerate(texts):
        if text.startswith("Traceback (most recent call last)"):
            upright += i + 1 < len(texts) and bool(FRAME.match(texts[i + 1]))
            upside_down += i > 0 and bool(FRAME.match(texts[i - 1])) and not (
                i + 1 < len(texts) and FRAME.match(texts[i + 1]))
        elif GENERIC_ERROR.search(text) and i + 1 < len(texts) and FRAME.match(texts[i + 1]):
            upside_down += 1
    return upside_down > upright


#: A terminal or web console that hard-wraps at its width leaves lines of exactly that many characters, none longer.
_MIN_WRAP_WIDTH = 60
_MIN_WRAPPED_LINES = 3
#: Console widths people leave at their default: two lines of exactly one of these are enough.
_CONSOLE_WIDTHS = frozenset({80, 100, 120, 132, 150, 160, 180, 200, 220, 240, 250, 256})


#: How a line that is a record of its own begins (never the rest of a wrapped one): a traceback's header or frame.
_RECORD_START = re.compile(r'^\s*(?:File "|Traceback \(|During handling|The above exception)')


def _new_record(raw: str) -> bool:
    """A line that begins a log record (a level, a timestamp, a traceback part), so it cannot be a wrapped rest."""
    norm = normalize_line(raw)
    # A prefix the normaliser peeled (a process tag "(VllmWorker rank=0 pid=4360)", a compose service's name) opens
    # a line of the process that wrote it, even without a level or a time.
    peeled = bool(norm.text) and not raw.lstrip().startswith(norm.text[:40])
    return norm.level is not None or norm.timestamp is not None or peeled or bool(_RECORD_START.match(norm.text))


def _unwrapped(numbered: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """(line number of the first piece, the line) with a hard-wrapped log's pieces joined again: when at least three
    different lines share the longest length (>= 60; two for a common console width), the log was copied from a
    console of that width, and each line of exactly that width goes on in the next one."""
    width = max((len(raw) for _, raw in numbered), default=0)
    at_width = len({raw for _, raw in numbered if len(raw) == width})
    if width < _MIN_WRAP_WIDTH or at_width < (2 if width in _CONSOLE_WIDTHS else _MIN_WRAPPED_LINES):
        return numbered
    out: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, raw in numbered:
        if pending is not None and _new_record(raw):
            out.append(pending)  # the next line starts a record of its own: the long one was whole
            pending = None
        if pending is not None:
            number, raw = pending[0], pending[1] + raw
        pending = (number, raw) if len(raw) % width == 0 and raw else None
        if pending is None:
            out.append((number, raw))
    if pending is not None:
        out.append(pending)
    return out


def prepare(log_tail: str) -> list[LogLine]:
    """The tail's lines in time order, normalised, with traceback source lines marked."""
    lines: list[LogLine] = []
    stamps: list[tuple[str, str] | None] = []
    for number, raw in _unwrapped(_split(log_tail)):
        norm = normalize_line(raw)
        lines.append(LogLine(number=number, raw=raw, text=norm.text, level=norm.level))
        stamps.append(norm.timestamp)
    if _newest_first(lines, stamps):
        lines.reverse()
    previous_text = ""
    for line in lines:
        if not line.text:
            continue
        line.code = (bool(FRAME.match(previous_text)) or bool(_CODE_START.match(line.text))) \
            and not GENERIC_ERROR.search(line.text)
        previous_text = line.text
    _quiet_warning_continuations(lines)
    # Only the latest launch counts when a log holds several.
    starts = _launch_starts(lines)
    if len(starts) > 1:  # a single launch keeps its preamble (platform detection comes before the version line)
        lines = lines[starts[-1]:]
    return lines


#: Python's warnings format ("<file>.py:<line>: <Category>Warning: <message>", Lib/warnings.py formatwarning) with a
#: message that goes on to the next line (it ends with a colon): vLLM's "RuntimeWarning: Failed to read commit
#: hash:\nNo module named 'vllm._version'" (vllm/version.py, 0.6.x, a fallback to "dev", volcengine/verl#393).
_WARNING_GOES_ON = re.compile(r"\.py:\d{1,6}\)?: [A-Z]\w{0,40}Warning: [^\n]{0,300}:\s*$")


def _quiet_warning_continuations(lines: list[LogLine]) -> None:
    """The line that carries on a warning's message is the warning's, at its level: "No module named X" there is the
    reason a fallback was taken, not an import that failed the start."""
    for pos, line in enumerate(lines[:-1]):
        following = lines[pos + 1]
        if _WARNING_GOES_ON.search(line.text) and following.text and not following.code and following.level is None:
            following.level = "WARNING"


#: A launch logs its start on more than one line (vLLM: "vLLM API server version X", then "non-default args: {...}"):
#: start lines of different kinds this close together are one launch; the same kind again is the next launch.
_SAME_LAUNCH_LINES = 4


def _launch_starts(lines: list[LogLine]) -> list[int]:
    """The first start line of each launch in the tail (a paste that puts the error above the launch's own start
    lines is then one launch, whose error is kept)."""
    starts: list[int] = []
    last, kinds = -_SAME_LAUNCH_LINES - 1, set()
    for pos, line in enumerate(lines):
        match = LAUNCH_START.search(line.text)
        if match is None:
            continue
        kind = match.group(0)[:12]  # (tells the start patterns apart: "server_args=", "vLLM API ser", "non-default ")
        if pos - last > _SAME_LAUNCH_LINES or kind in kinds:
            starts.append(pos)
            kinds = set()
        kinds.add(kind)
        last = pos
    return starts


#: Failures the code that prints them catches and goes on from, with the traceback it logs under them: vLLM's chat
#: template warm-up (vllm/entrypoints/openai serving_chat.py warmup(): logger.exception("Chat template warmup
#: failed"), then the server starts), and CPython's unraisable-exception hook ("Exception ignored in: <function
#: X.__del__ ...>", sys.unraisablehook: never stops the program).
HANDLED_FAILURE = re.compile(r"^Chat template warmup failed\b|^Exception ignored (?:in|on calling)\b")
#: A traceback's own lines: its header, a frame, carets or a blank, a chain's joint (the source under a frame is
#: marked ``code`` by ``prepare``).
_TRACEBACK_LINE = re.compile(r'^(?:Traceback \(most recent call last\)|File "|[\s^~]*$|During handling of the above'
                             r'|The above exception)')


def in_traceback(line: LogLine) -> bool:
    """Whether a line is part of a traceback other than its exception line."""
    return line.code or bool(_TRACEBACK_LINE.match(line.text))


def drop_handled(lines: list[LogLine]) -> list[LogLine]:
    """The tail without the failures the engine caught and went on from (the notice, its traceback, its exception
    line): what is left says whether the start went on."""
    out: list[LogLine] = []
    inside = False
    for line in lines:
        if HANDLED_FAILURE.search(line.text):
            inside = True
            continue
        if inside:
            if in_traceback(line):
                continue
            inside = False
            if GENERIC_ERROR.search(line.text):
                continue  # the exception line that ends the caught traceback
        out.append(line)
    return out


#: A message wrapped onto the next line: the line ends mid-sentence and the next goes on in lower case.
_ENDS_SENTENCE = re.compile(r"[.!?:;\])}\"'>]$")
_GOES_ON = re.compile(r"^[a-z]")
#: A program naming itself at the start of its line ("slurmstepd-gpu07: error: ...", "python[42]: ..."): a record.
_PROGRAM_PREFIX = re.compile(r"^[\w.-]{1,60}(?:\[\d{1,10}\])?: ")


def continued(lines: list[LogLine], pos: int) -> str | None:
    """The line at ``pos`` joined with the next when the next continues its message (pydantic's "Value error, ..."
    wrapped by a terminal or a paste: "... has model type `x`" / "but Transformers does not recognize ...")."""
    if pos + 1 >= len(lines):
        return None
    following = lines[pos + 1]
    if not following.text or following.code or following.level is not None or _ENDS_SENTENCE.search(lines[pos].text) \
            or not _GOES_ON.match(following.text) or ERROR_SHAPED.search(following.text) \
            or _PROGRAM_PREFIX.match(following.text):
        return None  # a line of its own: a level of its own, a frame, an error, or the previous line was complete
    return f"{lines[pos].text} {following.text}"
