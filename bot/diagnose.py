"""Crash diagnoser: the end of a server log -> Diagnosis (cause, the lines that prove it, next steps, a fix).

Input is the bounded tail of the log (``bot.tail.read_tail`` / ``tail -c``), the exit code when known, and the plan
and host facts when known; with them the next steps carry this plan's numbers and the fix is a plan change
(``PlanOverrides``) ready to relaunch behind an approval.

How it reads a log:
1. Lines are put in time order (logs pasted newest-first are recognised by their timestamps or traceback shape),
   stripped of launcher prefixes (``bot.logevents.normalize_line``), and cut to the latest launch in the file.
2. Every line is matched against the rules of ``bot.diagnose_rules`` (source lines quoted inside tracebacks are
   skipped, INFO/WARNING lines only count for rules that say so). The strongest rule wins; among equals the earliest
   line, because the root cause comes before its consequences ("Engine core initialization failed", SIGQUIT,
   the shell's "Killed" after SGLang killed its own process tree).
3. A CUDA OOM is placed in its phase (weights / profiling / KV cache / CUDA graphs / serving) from its traceback
   and the lines around it.
4. If the server kept serving after an error, or no error is there, the log is healthy: ``none``. An error no rule
   knows is reported as ``other`` with its last error lines quoted, never dressed up as a known cause.
5. ``bot.diagnose_advice`` turns the finding into next steps and, where the remedy is a plan change, a ``Fix``.
Every quoted line, the cause and the steps are redacted (``bot.redact``) before they leave this module.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bot.diagnose_advice import Finding, LogLine, PlanView, advise
from bot.diagnose_rules import (
    CONTEXT_LINES,
    FRAMING,
    GENERIC_ERROR,
    OOM,
    OOM_BY_PHASE,
    OOM_MESSAGE_NOISE,
    OOM_MESSAGE_PHASE,
    PHASE_LOOKAHEAD,
    PHASE_LOOKBACK,
    PHASE_MARKERS,
    RULES,
    SELF_KILL,
    Rule,
)
from bot.logevents import (
    LAUNCH_START,
    DecodeStats,
    LogReader,
    NormalizedLine,
    ServerReady,
    detect_engine_of,
    normalize_line,
    strip_ansi,
)
from bot.models import Diagnosis, EvidenceLine, HostFacts, LaunchPlan, PlanOverrides
from bot.redact import redact
from bot.tail import TAIL_BYTES, read_tail

MAX_EVIDENCE_CHARS = 400
SIGKILL_EXIT_CODES = frozenset({137, -9})

_FRAME = re.compile(r'^File "')
#: Lines that belong to a traceback without being frames: its header, chained-exception notes, elisions.
_STACK_NOISE = re.compile(r"^Traceback \(most recent call last\)|^\.\.\.|^$")
_CODE_START = re.compile(r"^(?:raise|assert)\b|^[~^\s]+$")
#: Access-log and scheduler lines of a working server: never an error, so never matched against the rules.
_ROUTINE = re.compile(r'"(?:GET|POST|PUT|DELETE|HEAD) [^"]*HTTP/[\d.]+" [1-3]\d\d\b|^Prefill batch[.,] #new-seq')
_HTTP_UP = re.compile(r"Uvicorn running on|Application startup complete|\"GET /(?:get_)?model_info HTTP/1\.1\" 200")


# --------------------------------------------------------------------------------------------- reading the tail


@dataclass
class _Hit:
    rule: Rule
    pos: int  # position in time order
    match: re.Match[str]


def _split(log_tail: str) -> list[str]:
    lines = log_tail.replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
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
            upright += i + 1 < len(texts) and bool(_FRAME.match(texts[i + 1]))
            upside_down += i > 0 and bool(_FRAME.match(texts[i - 1])) and not (
                i + 1 < len(texts) and _FRAME.match(texts[i + 1]))
        elif GENERIC_ERROR.search(text) and i + 1 < len(texts) and _FRAME.match(texts[i + 1]):
            upside_down += 1
    return upside_down > upright


def _prepare(log_tail: str) -> list[LogLine]:
    """The tail's lines in time order, normalised, with traceback source lines marked."""
    lines: list[LogLine] = []
    stamps: list[tuple[str, str] | None] = []
    for number, raw in enumerate(_split(log_tail), start=1):
        norm = normalize_line(raw)
        lines.append(LogLine(number=number, raw=raw, text=norm.text, level=norm.level))
        stamps.append(norm.timestamp)
    if _newest_first(lines, stamps):
        lines.reverse()
    previous_text = ""
    for line in lines:
        if not line.text:
            continue
        line.code = (bool(_FRAME.match(previous_text)) or bool(_CODE_START.match(line.text))) \
            and not GENERIC_ERROR.search(line.text)
        previous_text = line.text
    # Only the latest launch counts when a log holds several.
    starts = [i for i, line in enumerate(lines) if LAUNCH_START.search(line.text)]
    if starts and starts[-1] > 0:
        lines = lines[starts[-1]:]
    return lines


# --------------------------------------------------------------------------------------------- matching


def _scan(lines: list[LogLine], routine: set[int]) -> list[_Hit]:
    """Every rule hit, skipping source lines and lines already understood as healthy (``routine``)."""
    hits: list[_Hit] = []
    for pos, line in enumerate(lines):
        if not line.text or line.code or pos in routine:
            continue
        quiet = line.level in ("DEBUG", "INFO", "WARNING")
        for rule in RULES:
            if quiet and not rule.any_level:
                continue
            match = rule.pattern.search(line.text)
            if match is None or (rule.exclude is not None and rule.exclude.search(line.text)):
                continue
            if rule.context is not None and not any(
                    rule.context.search(other.text) for other in lines[max(0, pos - CONTEXT_LINES):pos]):
                continue
            hits.append(_Hit(rule, pos, match))
    return hits


def _oom_phase(lines: list[LogLine], pos: int) -> tuple[str, LogLine | None, float]:
    """(phase, the line that shows it, confidence) for an OOM at ``pos``."""
    message = OOM_MESSAGE_NOISE.sub("", lines[pos].text)
    for phase, pattern in OOM_MESSAGE_PHASE:
        if pattern.search(message):
            return phase, None, 0.85
    # The traceback right above the error: its frames are the call chain; the most specific phase on it wins.
    stack: list[LogLine] = []
    for back in range(pos - 1, max(-1, pos - PHASE_LOOKBACK - 1), -1):
        line = lines[back]
        if not (line.code or _FRAME.match(line.text) or _STACK_NOISE.search(line.text)):
            break
        stack.append(line)
    for phase, pattern in PHASE_MARKERS:
        marker = next((line for line in stack if pattern.search(line.text)), None)
        if marker is not None:
            return phase, marker, 0.85
    # No traceback: the nearest log line that names a phase (Ray/multi-process logs may print it just after).
    for back in range(pos - 1, max(-1, pos - PHASE_LOOKBACK - 1), -1):
        for phase, pattern in PHASE_MARKERS:
            if pattern.search(lines[back].text):
                return phase, lines[back], 0.75
    for ahead in range(pos + 1, min(len(lines), pos + PHASE_LOOKAHEAD + 1)):
        for phase, pattern in PHASE_MARKERS:
            if phase != "serving" and pattern.search(lines[ahead].text):
                return phase, lines[ahead], 0.7
    return "unknown", None, 0.55


@dataclass
class _Health:
    ready: LogLine | None = None
    ready_pos: int = -1
    decode: DecodeStats | None = None
    decode_line: LogLine | None = None
    decode_pos: int = -1
    last_step: LogLine | None = None  # the last milestone of the start (weights, KV cache, graphs)
    http_up: LogLine | None = None  # the HTTP server listens (SGLang: warm-up not finished yet)
    routine: set[int] = field(default_factory=set)  # positions of lines that are healthy progress, not errors


def _health(lines: list[LogLine], engine: str | None) -> _Health:
    reader = LogReader(engine)
    health = _Health()
    for pos, line in enumerate(lines):
        if _HTTP_UP.search(line.text):
            health.http_up = line
        if _ROUTINE.search(line.text):
            health.routine.add(pos)
        for event in reader.feed_normalized(NormalizedLine(line.text, line.level, None), line.raw):
            if event.kind == "error_line":
                continue
            health.routine.add(pos)
            if isinstance(event, ServerReady):
                health.ready, health.ready_pos = line, pos
            elif isinstance(event, DecodeStats):
                health.decode, health.decode_line, health.decode_pos = event, line, pos
            else:
                health.last_step = line
    return health


def _format_cause(template: str, match: re.Match[str]) -> str:
    groups = match.groups()
    text = template
    for index in range(len(groups) - 1, -1, -1):
        value = groups[index]
        if value is None:
            text = re.sub(r"\s*\(\{" + str(index) + r"\}\)", "", text)
            text = text.replace("{" + str(index) + "}", "")
        else:
            text = text.replace("{" + str(index) + "}", value.strip().rstrip(".")[:160])
    return re.sub(r"\{\d+\}", "?", text).strip()


def _choose(lines: list[LogLine], hits: list[_Hit]) -> Finding | None:
    self_kill_at = next((pos for pos, line in enumerate(lines) if SELF_KILL.search(line.text)), None)
    usable = [
        hit for hit in hits
        # A "Killed" after SGLang's own SIGQUIT is SGLang killing its process tree, not the OOM killer.
        if not (hit.rule.category == "host_oom_killed" and hit.rule.name in ("shell_killed", "sigkill_exit")
                and self_kill_at is not None and self_kill_at < hit.pos)
    ]
    if not usable:
        return None
    best = max(usable, key=lambda hit: (hit.rule.priority, -hit.pos))
    line = lines[best.pos]
    finding = Finding(category=best.rule.category, cause=_format_cause(best.rule.cause, best.match),
                      confidence=best.rule.confidence, kind=best.rule.kind, decisive=line, match=best.match,
                      rule=best.rule.name, pos=best.pos)
    if best.rule.category == OOM:
        phase, marker, confidence = _oom_phase(lines, best.pos)
        category, kind, cause = OOM_BY_PHASE[phase]
        finding.category, finding.kind, finding.cause = category, kind, cause
        finding.confidence = confidence
        if marker is not None:
            finding.support.append(marker)
    elif best.rule.context is not None:
        context = next((other for other in reversed(lines[max(0, best.pos - CONTEXT_LINES):best.pos])
                        if best.rule.context.search(other.text)), None)
        if context is not None:
            finding.support.append(context)
    return finding


# --------------------------------------------------------------------------------------------- no rule matched


#: An import failure logged as a mere warning before a crash.
_IMPORT_TROUBLE = re.compile(r"Failed to import|ImportError|No module named|cannot open shared object file"
                             r"|undefined symbol", re.IGNORECASE)

#: A consequence line that carries the failing process's own error ("Worker failed with error '...'").
_INNER_ERROR = re.compile(r"failed with error:? '(.+?)'?(?:, please check|$)", re.IGNORECASE)

_SIGNAL_EXITS = {139: "SIGSEGV", -11: "SIGSEGV", 134: "SIGABRT", -6: "SIGABRT", 143: "SIGTERM", -15: "SIGTERM",
                 130: "SIGINT", -2: "SIGINT"}


def _unrecognised(lines: list[LogLine], exit_code: int | None, health: _Health) -> Finding | None:
    errors = [(pos, line) for pos, line in enumerate(lines)
              if line.text and not line.code and GENERIC_ERROR.search(line.text) and not FRAMING.search(line.text)]
    framing = [(pos, line) for pos, line in enumerate(lines) if line.text and FRAMING.search(line.text)]
    self_kill = any(SELF_KILL.search(line.text) for line in lines)
    if errors or framing:
        last = max(pos for pos, _ in errors + framing)
        first = min(pos for pos, _ in errors + framing)
        alive_after = max(health.ready_pos, health.decode_pos) > last
        if exit_code in (None, 0) and (alive_after or (0 <= health.ready_pos < first and not framing)):
            return None  # request-level errors of a server that kept running
        distinct: list[LogLine] = []
        for _, line in reversed(errors):
            if all(line.text != seen.text for seen in distinct):
                distinct.append(line)
            if len(distinct) == 3:
                break
        if distinct:
            decisive = distinct[0]
            finding = Finding(category="other", confidence=0.3, decisive=decisive, support=distinct[1:],
                              cause=f"unrecognised crash; last error: {decisive.text[:160]}")
            if framing:
                finding.support.append(framing[0][1])
            # An import that failed earlier under a WARNING is the usual origin of a later AttributeError.
            warned = next((line for line in reversed(lines[:first]) if _IMPORT_TROUBLE.search(line.text)), None)
            if warned is not None:
                finding.support.append(warned)
                finding.kind = "import_warning"
            return finding
        decisive = framing[-1][1]
        inner = _INNER_ERROR.search(decisive.text)
        if inner:
            return Finding(category="other", confidence=0.3, decisive=decisive,
                           cause=f"unrecognised crash; the engine reported: {inner.group(1)[:160]}",
                           support=[line for _, line in framing[:-1]][:2])
        cause = ("a child process failed and SGLang shut down its process tree (SIGQUIT); the child's error is not "
                 "in this tail" if self_kill else
                 "the engine core failed to start; the root cause was printed above this tail or by another process")
        return Finding(category="other", confidence=0.3, decisive=decisive, cause=cause,
                       kind="root_cause_elsewhere", support=[line for _, line in framing[:-1]][:2])
    if exit_code in SIGKILL_EXIT_CODES and not self_kill:
        return Finding(category="host_oom_killed", confidence=0.55, decisive=_last_line(lines),
                       cause=f"the engine was killed by SIGKILL (exit {exit_code}) with no error in its log: most "
                             f"often the host OOM killer", kind="bare_kill")
    if exit_code not in (None, 0):
        signal = _SIGNAL_EXITS.get(exit_code)
        cause = (f"the engine stopped on {signal} (exit {exit_code}) with no error in its log" if signal else
                 f"the engine exited with code {exit_code} and no error in the log tail")
        return Finding(category="other", confidence=0.3, decisive=_last_line(lines), cause=cause,
                       kind="segfault" if signal == "SIGSEGV" else "signal" if signal else None)
    return None


def _last_line(lines: list[LogLine]) -> LogLine | None:
    return next((line for line in reversed(lines) if line.text), None)


def _healthy(lines: list[LogLine], health: _Health, error: LogLine | None = None) -> Diagnosis:
    evidence = [line for line in (error, health.ready, health.decode_line) if line is not None]
    if error is not None:
        cause = "an error was logged but the server kept serving after it"
        confidence = 0.6
        steps = [f"keep an eye on line {error.number}; nothing to relaunch"]
    elif health.decode is not None:
        d = health.decode
        extra = f", accept length {d.accept_len:.2f}" if d.accept_len is not None else ""
        cause = (f"healthy: serving ({d.running} running, {d.throughput_tok_s:.0f} tok/s{extra}); no error in the log")
        confidence, steps = 0.9, []
    elif health.ready is not None:
        cause = "healthy: the server is up and no error follows (an idle vLLM server logs nothing more)"
        confidence, steps = 0.9, []
    elif health.http_up is not None:
        evidence.append(health.http_up)
        cause = "healthy so far: the HTTP server is up and no error follows (the warm-up / ready line is next)"
        confidence, steps = 0.8, []
    else:
        last = health.last_step or _last_line(lines)
        if last is not None:
            evidence.append(last)
        cause = "no error in the log: the server is still starting (no ready line yet)" if lines \
            else "the log is empty"
        confidence = 0.6 if lines else 0.3
        steps = ["wait for the ready line; if nothing moves for minutes, look at the last line"] if lines else []
    return Diagnosis(category="none", cause=cause, evidence=_evidence(evidence, None, ()),
                     next_steps=steps, confidence=confidence)


# --------------------------------------------------------------------------------------------- output


def _clip(line: LogLine, match: re.Match[str] | None) -> str:
    """The line as printed (colours and tqdm redraws removed); a very long line keeps its head and the matched part."""
    text = strip_ansi(line.raw).rstrip()
    if "\r" in text:
        text = next((part for part in reversed(text.split("\r")) if part.strip()), "")
    if len(text) <= MAX_EVIDENCE_CHARS:
        return text
    needle = match.group(0)[:60] if match is not None else ""
    start = text.find(needle) if needle else -1
    if start < 0 or start + len(needle) < MAX_EVIDENCE_CHARS:
        return text[:MAX_EVIDENCE_CHARS - 1] + "…"
    head = MAX_EVIDENCE_CHARS // 2
    begin = max(head, start - 60)
    return text[:head] + " … " + text[begin:begin + MAX_EVIDENCE_CHARS - head - 4] + "…"


def _evidence(lines: list[LogLine | None], match: re.Match[str] | None, secrets: Iterable[str]) -> list[EvidenceLine]:
    out: list[EvidenceLine] = []
    seen: set[int] = set()
    for index, line in enumerate(lines):
        if line is None or line.number in seen:
            continue
        seen.add(line.number)
        out.append(EvidenceLine(line=line.number, text=redact(_clip(line, match if index == 0 else None), secrets)))
    return out


def _secrets_of(plan: LaunchPlan | None) -> list[str]:
    if plan is None:
        return []
    return [value for key, value in plan.env.items()
            if re.search(r"TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL", key, re.IGNORECASE)]


def diagnose(log_tail: str, *, exit_code: int | None = None, engine: str | None = None,
             plan: LaunchPlan | None = None, facts: HostFacts | None = None) -> Diagnosis:
    """Name the cause of a crash from the end of its log; ``none`` for a healthy log, ``other`` when unrecognised.

    ``log_tail`` is the bounded end of the log (see ``bot.tail``); ``exit_code`` the process's exit status when
    known (137 / -9: SIGKILL); ``engine`` 'sglang' / 'vllm' when known (else read from the plan or the log).
    With ``plan`` and ``facts`` the next steps carry this plan's numbers and ``fix`` is the changed plan.
    """
    lines = _prepare(log_tail)
    engine = engine or (plan.engine if plan else None) or detect_engine_of((line.raw, line.text) for line in lines)
    setup = PlanView(engine, plan, facts)
    health = _health(lines, engine)
    finding = _choose(lines, _scan(lines, health.routine))
    if finding is not None and finding.decisive is not None and exit_code in (None, 0):
        if max(health.ready_pos, health.decode_pos) > finding.pos and finding.category != "host_oom_killed":
            return _healthy(lines, health, error=finding.decisive)
    if finding is None:
        finding = _unrecognised(lines, exit_code, health)
    if finding is None:
        return _healthy(lines, health)
    if finding.category == "host_oom_killed" and exit_code is not None and exit_code not in SIGKILL_EXIT_CODES \
            and exit_code != 0:
        finding.confidence = min(finding.confidence, 0.45)
    steps, fix = advise(finding, setup, lines)
    secrets = _secrets_of(plan)
    evidence_lines = [finding.decisive] + sorted(finding.support, key=lambda line: line.number)
    return Diagnosis(
        category=finding.category,
        cause=redact(finding.cause, secrets),
        evidence=_evidence(evidence_lines, finding.match, secrets),
        next_steps=[redact(step, secrets) for step in steps],
        confidence=round(finding.confidence, 2),
        fix=fix,
    )


def diagnose_file(path: str | Path, engine: str | None = None, *, exit_code: int | None = None,
                  max_bytes: int = TAIL_BYTES) -> Diagnosis:
    """Diagnose a log file from its tail only (never reads the whole file)."""
    return diagnose(read_tail(path, max_bytes), exit_code=exit_code, engine=engine)


def _overrides_words(overrides: PlanOverrides) -> str:
    parts = [f"{name}={value}" for name, value in overrides.model_dump(exclude_defaults=True).items()]
    return ", ".join(parts) if parts else "no change"


def diagnosis_text(d: Diagnosis) -> str:
    """Plain multi-line rendering: cause, evidence (with line numbers), next steps, fix."""
    out = [f"Cause: {d.cause}", f"Category: {d.category} (confidence {d.confidence:.2f})"]
    if d.evidence:
        out.append("Evidence:")
        width = len(str(max(e.line for e in d.evidence)))
        out.extend(f"  line {e.line:>{width}}: {e.text}" for e in d.evidence)
    if d.next_steps:
        out.append("Next steps:")
        out.extend(f"  {i}. {step}" for i, step in enumerate(d.next_steps, start=1))
    if d.fix is not None:
        out.append(f"Fix (relaunch after approval): {d.fix.summary} [{_overrides_words(d.fix.overrides)}]")
    return "\n".join(out)
