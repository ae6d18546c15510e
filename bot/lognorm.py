"""Log lines without their prefixes: the engine's own message, its level and its time (for bot/logevents.py, the
follower and the diagnoser).

Real logs carry prefixes that vary by launcher and version; ``normalize_line`` removes them so every pattern matches
the engine's own message: ANSI colours, docker-compose ``sglang-1  | ``, Ray/vLLM process tags
``(EngineCore_DP0 pid=123)``, ``[rank0]:``, vLLM ``INFO 06-22 02:54:47 [file.py:123]``, SGLang
``[2025-06-19 15:12:27 TP0]``, glog's ``E1216 02:12:49.624646 179 model.py:248]``, ISO timestamps, Python-logging
and journald prefixes, Ray's ``[repeated 4x across cluster]`` suffix and tqdm carriage-return redraws. The formats
quoted in the comments are from shared/engines/sglang-log-lines.md and vllm-log-lines.md.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from bot.logfields import logger_fields

# Syslog sinks print the ESC byte as the text "#033" (vllm-project/vllm#1160).
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][A-Za-z0-9]|(?<![\w\]])\[(?:\d{1,3};)*\d{1,3}m"
                   r"|#033\[[0-9;]{0,20}m")
_COMPOSE = re.compile(r"^[A-Za-z0-9][\w.-]*\s+\|\s?")
#: (A pid written out as "..." or "xxx": people blank their pids and IPs before they paste.)
_PROCESS_TAG = re.compile(r"^\((?:[^()\s]+\s+)?(?:rank=\d+\s+)?pid=(?:\d+|\.{3}|x{1,8}|\*{1,8}|<\w{1,10}>)"
                          r"(?:,\s*ip=[\w.*:-]{1,40})?\)\s*")
_RANK_TAG = re.compile(r"^\[rank\d+\]:\s?")
#: (the tags a launcher writes before a line, for the whole-paste reader's use: bot/diagnose/paste.py)
PROCESS_TAG, RANK_TAG = _PROCESS_TAG, _RANK_TAG
_ISO_TS = re.compile(r"^(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d)(?:[.,](\d+))?(?:Z|[+-]\d\d:?\d\d)?\s*")
_SGLANG_TS = re.compile(r"^\[(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:[.,](\d+))?(?:\s+[A-Z]{1,4}\d+)*\]\s*")
_VLLM_LEVEL = re.compile(
    # (the date may be blanked out of a paste: "ERROR [core.py:1136] ...")
    r"^(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+(?:(\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d+))?\s+)?"
    r"(?:\[[\w./-]+:\d+\]|[\w./-]+:\d+\])\s*"
)
_PY_LEVEL = re.compile(
    r"^-?\s*(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\b(?::\s+|\s+-\s+|\s+)(?:[\w./-]+:\d+(?::|\s+--?)\s+)?"
)
_TORCH_LEVEL = re.compile(r"^\[([WEIF])(?:\d{4}\s[\d:.]+)?\s*[\w./-]*:\d+\]\s*")
#: Google's logging (glog / absl) as C++ parts of a server print it, "E1216 02:12:49.624646 179 model.py:248] ...":
#: Triton's Python backend that hosts vLLM, Mooncake's transfer engine, gRPC (github.com/google/glog, LogMessage's
#: prefix "Lmmdd hh:mm:ss.uuuuuu threadid file:line]").
_GLOG = re.compile(r"^([IWEF])(\d\d)(\d\d) (\d\d:\d\d:\d\d)\.(\d{1,9})\s{1,8}\d{1,10} [\w./-]{1,200}:\d{1,7}\]\s*")
_JOURNAL = re.compile(r"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ [\w.@-]+(?:\[\d+\])?:\s")
#: A structured (JSON) log line's message field, as wrappers print them ({"level":...,"message":"..."}).
_JSON_MESSAGE = re.compile(r'^\{?[^"]{0,8}(?:"[\w.-]{1,30}"\s*:\s*(?:"[^"]{0,80}"|[\w.-]{1,40})\s*,\s*){0,8}'
                           r'"(?:message|msg|log|text|error)"\s*:\s*"')
_RAY_REPEAT = re.compile(r"(?<!\s)\s*+\[repeated \d+x across cluster\].*$")

#: Python's warnings module writes "<file>:<line>: <Category>: <message>" (warnings.formatwarning) with no level of
#: the logger's: a warning all the same ("torch/cuda/__init__.py:63: FutureWarning: The pynvml package is deprecated").
_PY_WARNING = re.compile(r"^[^\s:]{1,400}:\d{1,7}: (?:[A-Z]\w{0,40})?Warning: ")

_LEVEL_NAMES = {"W": "WARNING", "E": "ERROR", "I": "INFO", "F": "CRITICAL", "WARN": "WARNING"}


class NormalizedLine(NamedTuple):
    """A log line without its prefixes: the engine's message, its level (when a prefix said) and its time."""

    text: str
    level: str | None  # DEBUG / INFO / WARNING / ERROR / CRITICAL, or None when no prefix told
    timestamp: tuple[str, str] | None  # ("full", "2025-06-19 15:12:27.123") or ("md", "06-22 02:54:47")


def strip_ansi(line: str) -> str:
    return _ANSI.sub("", line)


def _json_unescape(rest: str) -> str:
    """The message of a JSON log line from its opening quote on: up to its closing quote, escapes read."""
    end = re.search(r'(?<!\\)"', rest)
    body = rest[:end.start()] if end else rest
    return body.replace('\\"', '"').replace("\\n", " ").replace("\\t", " ").replace("\\\\", "\\")


def normalize_line(line: str) -> NormalizedLine:
    """Remove launcher/engine prefixes (stacked in any order) and keep level and timestamp when given."""
    text = strip_ansi(line).lstrip()  # logs pasted into markdown arrive indented
    if "\r" in text:
        # tqdm redraws a bar on one line with carriage returns: the last state is what counts.
        parts = [p for p in text.split("\r") if p.strip()]
        text = parts[-1] if parts else ""
    text = text.rstrip()
    level: str | None = None
    stamp: tuple[str, str] | None = None
    json_message = _JSON_MESSAGE.match(text)
    if json_message:
        text = _json_unescape(text[json_message.end():])
    for _ in range(4):  # prefixes stack (compose + Ray tag + vLLM level); a few passes peel them all
        before = text
        for pattern in (_COMPOSE, _PROCESS_TAG, _RANK_TAG, _JOURNAL):
            match = pattern.match(text)
            if match:
                text = text[match.end():]
        match = _SGLANG_TS.match(text) or _ISO_TS.match(text)
        if match:
            stamp = stamp or ("full", f"{match.group(1)} {match.group(2)}.{(match.group(3) or '0'):0<6}")
            text = text[match.end():]
            text, named = logger_fields(text)
            level = level or (_LEVEL_NAMES.get(named, named) if named else None)
        match = _VLLM_LEVEL.match(text)
        if match:
            level = level or _LEVEL_NAMES.get(match.group(1), match.group(1))
            if match.group(2):
                stamp = stamp or ("md", f"{match.group(2)} {match.group(3)}.{(match.group(4) or '0'):0<6}")
            text = text[match.end():]
        elif glog := _GLOG.match(text):
            level = level or _LEVEL_NAMES[glog.group(1)]
            stamp = stamp or ("md", f"{glog.group(2)}-{glog.group(3)} {glog.group(4)}.{glog.group(5)[:6]:0<6}")
            text = text[glog.end():]
            if text.startswith('"'):  # (Triton quotes its messages, newlines escaped: '"[vllm] Failed ...\\n"')
                text = _json_unescape(text[1:])
        else:
            match = _PY_LEVEL.match(text) or _TORCH_LEVEL.match(text)
            if match:
                name = match.group(1)
                level = level or _LEVEL_NAMES.get(name, name)
                text = text[match.end():]
        if text == before:
            break
    text = _RAY_REPEAT.sub("", text)
    if level is None and _PY_WARNING.match(text):
        level = "WARNING"
    return NormalizedLine(text.strip(), level, stamp)
