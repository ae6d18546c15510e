"""Undo how a whole log was pasted before its lines are read: HTML entities, a Markdown / e-mail quote, an editor's line
numbers, and a log that arrived as one escaped string (a JSON record, a Python ``repr`` of captured output).

Per-line wrappers (a compose prefix, a process tag, a JSON shipper's record of one line) are the normaliser's job
(``bot.logevents.normalize_line``); what this module undoes is decided on the whole text, because only the whole text
says it: one line that starts with ``>`` or ``12`` proves nothing, every line doing so is a quote or a numbering.

Where each comes from, as people paste crash logs:
- entities: Slack's message text escapes ``&``, ``<`` and ``>`` (api.slack.com/reference/surfaces/formatting,
  "Escaping text"); a page's HTML source or an e-mail digest escapes quotes too (``&quot;``, ``&#39;``);
- ``> `` quotes: GitHub and Slack Markdown quote blocks, e-mail replies; a line in ``**bold**`` or `` `code` ``, a
  code fence's own line;
- line numbers: ``cat -n``, ``less -N``, an editor's gutter copied with the text (``12 | ...``, ``12: ...``);
- escaped newlines: a traceback inside one JSON string (``{"log": "Traceback ...\\n  File ..."}``) or a Python
  ``repr`` of a child's output (``stderr: b'...\\n...'``), as RL frameworks and job runners print them.
"""

from __future__ import annotations

import html
import json
import re

from bot.lognorm import PROCESS_TAG, RANK_TAG, normalize_line, strip_ansi

#: One real entity is enough: logs do not write ``&lt;`` of their own.
_ENTITY = re.compile(r"&(?:lt|gt|amp|quot|apos|#\d{1,6}|#x[0-9a-fA-F]{1,6});")
_QUOTE = re.compile(r"^[ \t]{0,3}> ?")
_NUMBERED = re.compile(r"^[ \t]*(\d{1,7})(?:\t| ?[|:] ?| {1,3}(?=\S))")
#: A backslash escape of a newline, tab, quote or backslash, as JSON and Python's repr write them.
_ESCAPE = re.compile(r"\\([ntr\"'\\])")
_ESCAPED_VALUES = {"n": "\n", "t": "\t", "r": "", '"': '"', "'": "'", "\\": "\\"}

#: Share of non-blank lines that must carry a quote mark / a line number before the whole text counts as quoted /
#: numbered: a quote or a gutter marks every line, a log's own lines only now and then.
_WHOLE = 0.8
#: Escaped newlines in one line before that line is read as a squashed log (one ``\n`` is a message's own text).
_MIN_ESCAPED_NEWLINES = 2
#: A quoted string ending in its one escaped newline is captured output only when it holds a line's worth of text.
_MIN_OUTPUT = 20
_FRAME = re.compile(r'^\s*File "')


def undo_paste(text: str) -> list[tuple[int, str]]:
    """The log as its program printed it, with the ways of pasting above undone, as (line number in ``text``, line):
    a squashed log's lines all point at the line that held them, so evidence still names a line of the paste. Text
    that shows none of these comes back as its own lines."""
    text = strip_ansi(text)  # (a coloured console's codes would hide a quote mark or a line number)
    if _ENTITY.search(text):
        text = html.unescape(text)
    for _ in range(4):  # a quote inside a quote (an e-mail reply to one), a numbered copy of a quote
        undone = _unnumbered(_unquoted(text))
        if undone == text:
            break
        text = undone
    text = "\n".join(_unmarked(line) for line in text.split("\n"))
    blob = _json_blob(text)
    if blob is not None:
        return [(1, line) for line in blob.split("\n")]
    out: list[tuple[int, str]] = []
    previous = ""
    for number, line in enumerate(text.split("\n"), start=1):
        # The source line under a frame is code: its "\n" is a literal of the program, not a squashed log.
        pieces = [line] if _FRAME.match(previous) else _unsquash(line)
        out += [(number, piece) for piece in pieces]
        previous = line if line.strip() else previous
    return out


#: A whole line wrapped in Markdown emphasis or inline code ("**RuntimeError: ...**", "_ValueError: ..._" in italics,
#: "`ValueError: ...`"; never when the mark also occurs inside, as in Slurm's "*** JOB ... ***"), and a code
#: fence's own line: GitHub and Slack render them, a paste keeps the marks.
#: (after a rank's or a process's tag, which the launcher wrote before the mark: "[rank1]: **RuntimeError: ...**")
#: (the normaliser's own patterns for those tags, bot/logevents.py)
_WRAPPED = re.compile(r"^(\s{0,8}(?:" + RANK_TAG.pattern.lstrip("^") + "|" + PROCESS_TAG.pattern.lstrip("^") + r")?)"
                      r"(\*\*|__|`|\*|_)(?=\S)(.{1,4000}?)(?<=\S)\2\s*$")
_FENCE = re.compile(r"^\s{0,8}(?:```|~~~)[\w+.-]{0,20}\s*$|^\s{0,8}`\s*$")
#: An inline-code mark that opens on one line and closes on another ("`ConnectionError: ... `trl vllm-serve`." then a
#: line of "`"; a traceback that ends "AssertionError`"): the one unmatched backtick at the line's edge.
_OPENING_TICK = re.compile(r"^(\s{0,8})`(?=\S)")
_CLOSING_TICK = re.compile(r"(?<=\S)`(\s*)$")


#: IPython's (Jupyter's, Colab's) frame line, "File ~/env/lib/.../gpu_model_runner.py:2874, in
#: GPUModelRunner._dummy_sampler_run(self, hidden_states)" (IPython.core.ultratb), in Python's own shape so the
#: traceback reads as one: 'File "~/env/lib/.../gpu_model_runner.py", line 2874, in GPUModelRunner._dummy_sampler_run'.
_IPYTHON_FRAME = re.compile(r"^(\s{0,8})File ([~/.\w][^\s,]{0,400}\.py):(\d{1,7}), in ([\w.<>]{1,200})(?:\(.{0,2000})?$")


def _unmarked(line: str) -> str:
    if _FENCE.match(line):
        return ""
    if ipython := _IPYTHON_FRAME.match(line):
        return f'{ipython.group(1)}File "{ipython.group(2)}", line {ipython.group(3)}, in {ipython.group(4)}'
    wrapped = _WRAPPED.match(line)
    if wrapped and wrapped.group(2) not in wrapped.group(3):
        return wrapped.group(1) + wrapped.group(3)
    if line.count("`") % 2:
        opened = _OPENING_TICK.sub(r"\1", line, count=1)
        return opened if opened != line else _CLOSING_TICK.sub(r"\1", line, count=1)
    return line


def _json_blob(text: str) -> str | None:
    """A paste that is one JSON value: its string fields that hold lines, in order (a record of a log shipper that kept
    a whole traceback in one field); None for any other text."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")) or "\n" in stripped:
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        return None
    fields = [field for field in _strings(value) if "\n" in field]
    return "\n".join(fields) if fields else None


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def _unsquash(line: str) -> list[str]:
    """A line holding a whole log with its newlines escaped, as separate lines again; the quoted string that holds it
    is taken out of what surrounds it (``stderr: b'...'``, ``{"log": "..."}``), which stays on lines of its own.
    One escaped newline is a squashed log only at the end of a quoted string (captured output ends in one); inside a
    message it is the message's own text."""
    quoted = _escaped_string(line)
    if quoted is None:
        if line.count("\\n") < _MIN_ESCAPED_NEWLINES:
            return [line]
        quoted = ("", line, "")
    head, body, tail = quoted
    if body.count("\\n") < _MIN_ESCAPED_NEWLINES and not (body.endswith("\\n") and len(body) >= _MIN_OUTPUT):
        return [line]
    lines = _ESCAPE.sub(lambda match: _ESCAPED_VALUES[match.group(1)], body).split("\n")
    prefix = head.strip()
    if prefix and lines and not normalize_line(prefix).text:
        # (a record's prefix alone, its level with it: Triton's glog 'E1216 ... model.py:248] "[vllm] Failed ...\n
        # ..."' is an error of the first line's)
        lines[0], prefix = f"{prefix} {lines[0]}", ""
    return ([prefix] if prefix else []) + lines + ([tail.strip()] if re.search(r"\w", tail) else [])


#: What comes right before a string literal's opening quote: a separator, or the ``b`` of a bytes repr.
_OPENS_AFTER = frozenset(" \t:=([,{b")


def _escaped_string(line: str) -> tuple[str, str, str] | None:
    """(before, inside, after) of the first quoted string in ``line`` that holds an escaped newline. One pass: each
    string is read to its closing quote once, so a megabyte line costs a megabyte."""
    i = 0
    while i < len(line):
        quote = line[i]
        if quote not in "'\"" or (i and line[i - 1] not in _OPENS_AFTER):
            i += 1
            continue
        j, newline = i + 1, False
        while j < len(line) and line[j] != quote:
            if line[j] == "\\" and j + 1 < len(line):
                newline = newline or line[j + 1] == "n"
                j += 2
            else:
                j += 1
        if newline:
            head = line[:i]
            return (head[:-1] if head.endswith("b") else head), line[i + 1:j], line[j + 1:]
        i = j + 1
    return None


def _marked(lines: list[str], mark: re.Pattern[str]) -> bool:
    filled = [line for line in lines if line.strip()]
    return len(filled) >= 1 and sum(bool(mark.match(line)) for line in filled) >= _WHOLE * len(filled)


def _unquoted(text: str) -> str:
    lines = text.split("\n")
    if not _marked(lines, _QUOTE):
        return text
    return "\n".join(_QUOTE.sub("", line, count=1) for line in lines)


def _unnumbered(text: str) -> str:
    """Line numbers of a gutter go up one a line; a log's own leading numbers (ranks, counts, years) do not."""
    lines = text.split("\n")
    if not _marked(lines, _NUMBERED):
        return text
    numbers = [int(match.group(1)) for line in lines if (match := _NUMBERED.match(line))]
    steps = sum(b - a == 1 for a, b in zip(numbers, numbers[1:]))
    if steps < _WHOLE * (len(numbers) - 1):
        return text
    return "\n".join(_NUMBERED.sub("", line, count=1) for line in lines)
