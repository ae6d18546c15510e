"""Crash diagnoser: the end of a server log -> Diagnosis (cause, the lines that prove it, next steps, a fix).

Input is the bounded tail of the log (``bot.tail.read_tail`` / ``tail -c``), the exit code when known, and the plan
and host facts when known; with them the next steps carry this plan's numbers and the fix is a plan change
(``PlanOverrides``) ready to relaunch behind an approval.

How it reads a log:
1. Lines are put in time order (logs pasted newest-first are recognised by their timestamps or traceback shape),
   stripped of launcher prefixes (``bot.logevents.normalize_line``), and cut to the latest launch in the file.
2. Every line is matched against the phrase rules (``bot.diagnose.rules``, ``bot.diagnose.signals``: source
   lines quoted inside tracebacks are skipped, INFO/WARNING lines only count for rules that say so), and the tail's
   structure (``bot.diagnose.structure``: exceptions with their frames and chained causes, the process exit, the
   start-up phase reached) against the structural rules (``bot.diagnose.structure_rules``: an exception decided by
   the package it was raised in). The strongest rule wins; among equals the earliest line, because the root cause
   comes before its consequences ("Engine core initialization failed", SIGQUIT, the shell's "Killed" after SGLang
   killed its own process tree). Competing categories close in strength are kept as the verdict's alternatives.
3. A CUDA OOM is placed in its phase (weights / profiling / KV cache / CUDA graphs / serving) from its traceback
   and the lines around it.
4. If the server kept serving after an error, or no error is there, the log is healthy: ``none``. An error no rule
   knows is reported as ``other`` with its last error lines quoted, never dressed up as a known cause
   (``bot.diagnose.unknown``).
5. ``bot.diagnose.advice`` turns the finding into next steps and, where the remedy is a plan change, a ``Fix``.
Every quoted line, the cause and the steps are redacted (``bot.redact``) before they leave this module.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from bot.diagnose.advice.plan_view import PlanView
from bot.diagnose.types import Finding, LogLine
from bot.diagnose.advice import advise
from bot.diagnose.areas import SPECULATIVE_ON, place
from bot.diagnose.error_end import error_shaped_end, warmup_refusal_end
from bot.diagnose.launch_facts import single_gpu_split
from bot.diagnose.ended import ended_quietly
from bot.diagnose.health import healthy_diagnosis, read_health
from bot.diagnose.ops import place_missing_op, place_missing_platform
from bot.diagnose.render import diagnosis_text, evidence_of, secrets_of
from bot.diagnose.rules import (
    CONTEXT_LINES,
    OOM,
    rules_for,
    SELF_KILL,
    Rule,
)
from bot.diagnose.oom_phases import OOM_BY_PHASE, oom_phase
from bot.diagnose.raised import QUIET_LEVELS, quote_assert, read_raised
from bot.diagnose.reading import continued, drop_handled, prepare
from bot.diagnose.structure import TailStructure, parse_structure
from bot.diagnose.structure_rules import hinted_categories, structural_hits
from bot.diagnose.own_death import monitor_line_alone, own_error_behind_kill
from bot.diagnose.unknown import (SIGKILL_EXIT_CODES, engine_death, error_after_ready, import_behind_inspection,
                                  unrecognised)
from bot.diagnose.version_check import engine_too_old
from bot.diagnose.vocabulary_rules import CAPABILITY, QUANT_WORDS
from bot.logevents import detect_engine_of
from bot.models import Diagnosis, HostFacts, LaunchPlan
from bot.redact import redact
from bot.tail import TAIL_BYTES, bound_text, read_tail

__all__ = ["diagnose", "diagnose_file", "diagnosis_text"]

#: A competing category within this many priority points of the winner makes the verdict unsure between them.
ALTERNATIVE_WINDOW = 12


# --------------------------------------------------------------------------------------------- reading the tail


@dataclass
class _Hit:
    rule: Rule
    pos: int  # position in time order
    match: re.Match[str]


#: Deaths dealt from outside the engine (the kernel's OOM killer, Slurm's time limit, preemption and cgroup): the
#: engine may still print a line or two after the killer's message reaches the same log, so a sign of life after
#: it does not make the log healthy.
KILLED_FROM_OUTSIDE = frozenset({"host_oom_killed", "time_limit", "preemption", "cgroup_oom"})
#: Rules that only guess a kill from a process's disappearance (vLLM's "died unexpectedly"): a server seen alive
#: after them was not killed.
_GUESSED_KILLS = frozenset({"engine_died", "engine_client_monitor"})


#: Rules whose line reports a stalled engine, again and again while it stays stalled (bot/diagnose/rules.py).
_STALLS = frozenset({"shm_broadcast_stall", "health_check_stall"})
#: ... and those whose line means a stall only once the server has been up (vLLM's broadcast wait is routine during a
#: long start-up step). SGLang's "Health check failed" is not among them: its health_generate logs it only once the
#: server left ServerStatus.Starting (srt/entrypoints/http_server.py returns a silent 503 before), so the line itself
#: says the server had come up.
_STALLS_ONLY_AFTER_START = frozenset({"shm_broadcast_stall"})


def _unsure_stall(finding: Finding) -> Finding:
    """A stall reported with no ready line in the tail: the server was up (the line says so), but an SGLang before
    ServerStatus also probed its first request, which may still be compiling kernels (a JIT on the first batch)."""
    finding.cause += "; no ready line in the tail, so possibly the first request still compiling kernels"
    finding.confidence = min(finding.confidence, 0.4)
    return finding


def _killed_from_outside(finding: Finding) -> bool:
    return finding.category in KILLED_FROM_OUTSIDE and finding.rule not in _GUESSED_KILLS

# --------------------------------------------------------------------------------------------- matching


def _scan(lines: list[LogLine], routine: set[int], rules: tuple[Rule, ...]) -> list[_Hit]:
    """Every rule hit, skipping source lines and lines already understood as healthy (``routine``)."""
    hits: list[_Hit] = []
    for pos, line in enumerate(lines):
        if not line.text or line.code or pos in routine:
            continue
        quiet = line.level in ("DEBUG", "INFO", "WARNING")
        joined = continued(lines, pos)
        for rule in rules:
            if (quiet and not rule.any_level) or (rule.level is not None and line.level != rule.level):
                continue
            text = line.text
            match = rule.pattern.search(text)
            if match is None and joined is not None:
                text, match = joined, rule.pattern.search(joined)
            if match is None or (rule.exclude is not None and rule.exclude.search(text)):
                continue
            if rule.context is not None and not any(
                    rule.context.search(other.text) for other in lines[max(0, pos - CONTEXT_LINES):pos]):
                continue
            hits.append(_Hit(rule, pos, match))
    return hits


_PLACEHOLDER = re.compile(r"\{(\d+)\}")
#: A parenthesis of the template that holds placeholders: "({1} tokens)", "({0}{1}{2})".
_HOLDING_PARENS = re.compile(r" ?\(([^()]*\{\d+\}[^()]*)\)")
#: ... and a closing ": {0}{1}" ("a model file is missing: {0}{1}" of a line that names no file).
_HOLDING_TAIL = re.compile(r":? ((?:\{\d+\})+)$")


def _format_cause(template: str, match: re.Match[str]) -> str:
    groups = match.groups()

    def missing(index: str) -> bool:
        return int(index) >= len(groups) or groups[int(index)] is None

    # A parenthesis whose every value is missing goes with them ("(the {1} tokens)" of a message cut before it).
    text = _HOLDING_PARENS.sub(lambda m: "" if all(missing(i) for i in _PLACEHOLDER.findall(m.group(1)))
                               else m.group(0), template)
    text = _HOLDING_TAIL.sub(lambda m: "" if all(missing(i) for i in _PLACEHOLDER.findall(m.group(1)))
                             else m.group(0), text)

    def value(m: re.Match[str]) -> str:
        index = int(m.group(1))
        if index >= len(groups):
            return "?"
        return "" if groups[index] is None else groups[index].strip().rstrip(".")[:160]

    return _PLACEHOLDER.sub(value, text).strip()


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
    # The first line of a cause, except a stall's: a hang is told by its last report (an earlier one it recovered from)
    best = max(usable, key=lambda hit: (hit.rule.priority,
                                        hit.pos if hit.rule.name in _STALLS else -hit.pos))
    line = lines[best.pos]
    finding = Finding(category=best.rule.category, cause=_format_cause(best.rule.cause, best.match),
                      confidence=best.rule.confidence, kind=best.rule.kind, decisive=line, match=best.match,
                      rule=best.rule.name, pos=best.pos, alternatives=list(best.rule.unsure))
    if best.rule.category == OOM:
        phase, marker, confidence = oom_phase(lines, best.pos)
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


def _hits(lines: list[LogLine], structure: TailStructure, routine: set[int], rules: tuple[Rule, ...],
          launch: list[str]) -> list[_Hit]:
    """Phrase-rule hits and structural hits (an exception explained by where it was raised; ``launch``: the command
    line, which a structural rule's condition on the tail may also find, e.g. a speculative flag)."""
    quiet = {pos for pos, line in enumerate(lines) if line.level in QUIET_LEVELS}
    found = _scan(lines, routine, rules)
    texts = [line.text for line in lines] + launch
    found += [_Hit(rule, pos, match) for rule, pos, match in structural_hits(structure, texts, routine | quiet)]
    return found


#: The start-up milestone an OOM followed, when neither its traceback nor the lines around it (PHASE_LOOKBACK)
#: name a phase: read as the nearest phase line is (bot/diagnose/structure.py MILESTONES -> OOM_BY_PHASE keys).
_OOM_PHASE_OF_MILESTONE = {"weights_loading": "weights", "drafter_loading": "weights",
                           "weights_loaded": "weights", "kv_allocated": "kv",
                           "graphs_capturing": "graph", "graphs_captured": "graph", "server_up": "serving"}


def _oom_by_milestone(finding: Finding, lines: list[LogLine], structure: TailStructure) -> None:
    """An OOM whose phase is not in its traceback or the lines around it: the last start-up milestone the tail
    reached before it, however far above, says when it struck."""
    if finding.rule != "cuda_oom" or finding.cause != OOM_BY_PHASE["unknown"][2]:
        return
    before = [m for m in structure.milestones if m.pos < finding.pos]
    phase = _OOM_PHASE_OF_MILESTONE.get(before[-1].phase) if before else None
    if phase is None:
        return
    finding.category, finding.kind, finding.cause = OOM_BY_PHASE[phase]
    finding.confidence = 0.6
    finding.support.append(lines[before[-1].pos])


#: A refusal of this GPU that names a quantization format is as much the format's on this GPU (the taxonomy's
#: quantization_unsupported) as the GPU's: the collections file Triton's "type fp8e4nv not supported in this
#: architecture" 7 times under one and twice under the other. Each verdict names the other then.
_GPU_OR_FORMAT = {"cuda_arch_or_driver": ("quantization_unsupported", re.compile(QUANT_WORDS, re.IGNORECASE)),
                  "quantization_unsupported": ("cuda_arch_or_driver", re.compile(CAPABILITY, re.IGNORECASE))}


def _alternatives(finding: Finding, hits: list[_Hit], structure: TailStructure) -> list[str]:
    """Other categories the evidence also supports: competing hits close in strength, or, for an unrecognised
    crash, the areas of the engine its exception came from."""
    winner = max((hit.rule.priority for hit in hits if hit.pos == finding.pos), default=0)
    close = [hit.rule.category for hit in sorted(hits, key=lambda hit: -hit.rule.priority)
             if hit.rule.category not in (finding.category, OOM) and hit.rule.priority >= winner - ALTERNATIVE_WINDOW]
    if finding.category == "other":
        close += hinted_categories(structure)
    out: list[str] = list(finding.alternatives)  # the winning rule's own known ambiguity first
    other_reading = _GPU_OR_FORMAT.get(finding.category)
    if other_reading and finding.decisive is not None and other_reading[1].search(finding.decisive.text):
        close.insert(0, other_reading[0])
    for category in close:
        if category != finding.category and category not in out:
            out.append(category)
    return out[:2]


def _launch_text(command: str | None, plan: LaunchPlan | None) -> str | None:
    """The command line that started the engine, as far as the caller knows it (a plan's argv, or a given command)."""
    if command:
        return command
    return shlex.join(plan.argv) if plan is not None and plan.argv else None


def _command_argv(command: str | None) -> tuple[str, ...]:
    """A given command line as its words (shell quoting read; a line shlex cannot read is split on blanks)."""
    if not command:
        return ()
    try:
        return tuple(shlex.split(command))
    except ValueError:
        return tuple(command.split())


def _refine(finding: Finding, lines: list[LogLine], structure: TailStructure, exit_code: int | None,
            speculative: bool) -> None:
    """What the rest of the tail and the launch say about the chosen finding: the area of an unrecognised crash, an
    OOM's phase, a missing op's or platform's origin, an import behind an inspection."""
    # An unrecognised crash: where it was raised and what its lines say (and whether the launch drafts).
    place(finding, lines, structure, speculative=speculative)
    _oom_by_milestone(finding, lines, structure)
    # (Ray's memory monitor kills the actor, and the job then exits 1: its own message is the proof.)
    if finding.category == "host_oom_killed" and exit_code is not None and exit_code not in SIGKILL_EXIT_CODES \
            and exit_code != 0 and finding.rule != "ray_memory_monitor":
        finding.confidence = min(finding.confidence, 0.45)
    finding.structure = structure
    place_missing_op(finding, lines)
    place_missing_platform(finding, lines)
    import_behind_inspection(finding, lines)


def diagnose(log_tail: str, *, exit_code: int | None = None, engine: str | None = None,
             plan: LaunchPlan | None = None, facts: HostFacts | None = None,
             command: str | None = None, ended: bool = False) -> Diagnosis:
    """Name the cause of a crash from the end of its log; ``none`` for a healthy log, ``other`` when unrecognised.

    ``log_tail`` is the bounded end of the log (see ``bot.tail``); ``exit_code`` the process's exit status when
    known (137 / -9: SIGKILL); ``engine`` 'sglang' / 'vllm' when known (else read from the plan or the log).
    With ``plan`` and ``facts`` the next steps carry this plan's numbers and ``fix`` is the changed plan.
    ``command``: the command line that launched the engine when there is no plan (a log someone sent with the
    command they ran); like a plan's argv it tells whether the launch ran speculative decoding. ``ended``: the
    process is known to be gone (the pipeline's crash path), so the answer is never ``none``.
    """
    # Bounded input before any rule runs: the last TAIL_BYTES characters, every line cut at MAX_LINE_CHARS.
    lines = drop_handled(prepare(bound_text(log_tail)))
    # The deployment's engine picks the engine-specific crash rules; a guess from the log's own lines only picks the
    # advice's spelling (a wrong guess must not drop the other engine's rules).
    deployed = engine or (plan.engine if plan else None)
    launch = _launch_text(command, plan)
    engine = deployed or detect_engine_of([(line.raw, line.text) for line in lines]
                                          + ([(launch, launch)] if launch else []))
    setup = PlanView(engine, plan, facts, command_argv=_command_argv(command) if plan is None else ())
    health = read_health(lines, engine)
    structure = parse_structure(lines)
    asserted = read_raised(lines, structure)
    hits = _hits(lines, structure, health.routine, rules_for(deployed), [launch] if launch else [])
    finding = _choose(lines, hits)
    if finding is not None and finding.rule in _STALLS and health.alive_pos < 0:
        finding = None if finding.rule in _STALLS_ONLY_AFTER_START else _unsure_stall(finding)
    if finding is not None:
        quote_assert(finding, lines, asserted)
        finding = own_error_behind_kill(finding, lines, exit_code, health, structure) or finding
        alone = None if ended or exit_code not in (None, 0) else monitor_line_alone(finding, lines)
        if alone is not None:
            return alone
    if finding is not None and finding.decisive is not None and exit_code in (None, 0):
        outlived = health.alive_pos > finding.pos and not (health.died_while_up and health.dead_pos >= finding.pos)
        if outlived and not _killed_from_outside(finding):
            if not ended:
                return healthy_diagnosis(lines, health, error=finding.decisive)
            finding = ended_quietly(lines, exit_code, health, earlier=finding.decisive)
    if finding is None:
        finding = warmup_refusal_end(lines, health) or unrecognised(lines, exit_code, health, structure) \
            or error_shaped_end(lines, health) or engine_death(lines, health)
    if finding is None and ended:
        finding = ended_quietly(lines, exit_code, health, earlier=error_after_ready(lines, health))
    if finding is None:
        last = structure.last_phase
        return healthy_diagnosis(lines, health, error_last=error_after_ready(lines, health),
                                 phase=last.phase if last else None)
    speculative = bool(plan and plan.speculative not in (None, "none")) \
        or bool(launch and SPECULATIVE_ON.search(launch))
    _refine(finding, lines, structure, exit_code, speculative)
    engine_too_old(finding, setup, lines)
    finding.alternatives = _alternatives(finding, hits, structure)
    single_gpu_split(finding, setup, lines)
    if finding.alternatives:
        finding.confidence = min(finding.confidence, 0.6)
    steps, fix = advise(finding, setup, lines)
    secrets = secrets_of(plan)
    evidence_lines = [finding.decisive] + sorted(finding.support, key=lambda line: line.number)
    return Diagnosis(
        category=finding.category,
        cause=redact(finding.cause, secrets),
        evidence=evidence_of(evidence_lines, finding.match, secrets),
        next_steps=[redact(step, secrets) for step in steps],
        confidence=round(finding.confidence, 2),
        fix=fix,
        alternatives=finding.alternatives,
    )


def diagnose_file(path: str | Path, engine: str | None = None, *, exit_code: int | None = None,
                  max_bytes: int = TAIL_BYTES, command: str | None = None, ended: bool = False) -> Diagnosis:
    """Diagnose a log file from its tail only (never reads the whole file)."""
    return diagnose(read_tail(path, max_bytes), exit_code=exit_code, engine=engine, command=command, ended=ended)

