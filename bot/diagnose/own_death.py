"""Kills the tail explains otherwise: a process that died of its own error, read as a kill from outside.

The shell's "Killed" and vLLM's "Worker proc ... died unexpectedly" are read as the OOM killer's work when nothing
else is known (bot/diagnose/rules.py shell_killed, planners/engines/vllm/crash_rules.py engine_died). Two tails say
otherwise: the engine shut itself down after an exception and the shell reported the kill of its process group, or a
worker exited right after a native failure of its own (a CUDA check macro exits the process) or after its own
Python error, which vLLM's executor relays ("Worker failed with error '...'"). Then that error is the
cause, and the kill is named as the alternative.
"""

from __future__ import annotations

import re

from bot.diagnose.health import Health
from bot.diagnose.render import evidence_of
from bot.diagnose.rules import GENERIC_ERROR, SELF_KILL
from bot.diagnose.structure import TailStructure
from bot.diagnose.types import Finding, LogLine
from bot.diagnose.unknown import unrecognised
from bot.models import Diagnosis

#: The engine shutting itself down after a worker's error: vLLM's client ("Got fatal signal from worker processes,
#: shutting down", v1/engine/core_client.py), its executor, SGLang's kill of its process tree.
_ENGINE_SHUTDOWN = re.compile(r"Got fatal signal from worker processes|shutting down executor|Engine core initiali[sz]ation"
                              r" failed|" + SELF_KILL.pattern, re.IGNORECASE)
#: A native failure a process dies of by itself (a CUDA check macro's exit, C++'s terminate, an abort).
_NATIVE_FAILURE = re.compile(r"^Failed: Cuda error |\bCuda failure '|terminate called after throwing|^Aborted\b"
                             r"|\bCUDA error: ")
#: A worker's own Python error, relayed by vLLM's executor before the worker process goes ("RuntimeError: Worker
#: failed with error '<the worker's message>', please check the stack trace above for the root cause",
#: vllm/v1/executor/multiproc_executor.py get_response): the worker raised, then exited; nobody killed it.
_WORKER_RAISED = re.compile(r"\bWorker failed with error '")
#: How far above the kill its explanation is looked for (lines).
_SHUTDOWN_WINDOW, _NATIVE_WINDOW = 20, 10


def own_error_behind_kill(finding: Finding, lines: list[LogLine], exit_code: int | None, health: Health,
                          structure: TailStructure) -> Finding | None:
    """The finding that replaces a kill the tail explains otherwise (the kill named as its alternative), or None."""
    if finding.pos <= 0:
        return None
    before = lines[:finding.pos]
    own: Finding | None = None
    if finding.rule == "shell_killed":
        if any(_ENGINE_SHUTDOWN.search(line.text) for line in before[-_SHUTDOWN_WINDOW:]) \
                and any(GENERIC_ERROR.search(line.text) for line in before):
            own = unrecognised(before, exit_code, health, structure)
    elif finding.rule in ("engine_died", "engine_client_monitor"):
        start = max(0, finding.pos - _NATIVE_WINDOW)
        native = next(((at, line) for at, line in reversed(list(enumerate(before))[start:])
                       if _NATIVE_FAILURE.search(line.text)), None)
        raised = next(((at, line) for at, line in reversed(list(enumerate(before))[start:])
                       if _WORKER_RAISED.search(line.text)), None)
        if raised is not None and native is None:
            own = unrecognised(before, exit_code, health, structure) or Finding(
                category="other", confidence=0.45, decisive=raised[1], pos=raised[0],
                cause=f"a worker died of an error of its own: {raised[1].text[:160]}")
        elif native is not None:
            own = unrecognised(before, exit_code, health, structure) or Finding(
                category="other", confidence=0.45, decisive=native[1], pos=native[0], kind="kernel_crash",
                cause=f"a worker died of a native failure of its own: {native[1].text[:160]}")
    if own is not None:
        own.alternatives = [finding.category]
    return own


def monitor_line_alone(finding: Finding, lines: list[LogLine]) -> Diagnosis | None:
    """A tail that is nothing but the client monitor's line: nothing says the engine was killed, or that anything
    ran wrong. Healthy as far as the log shows, the kill named as the alternative (a process known to be gone is
    read by the caller as a death, never through here). vLLM's client monitor (v1/engine/core_client.py
    monitor_engine_cores, vLLM 0.11.0) logs it whenever the engine process exits before the client: a kill, and also
    the end of an offline script whose outputs were printed (vllm-project/vllm#28838, #32468)."""
    if finding.rule != "engine_client_monitor" or finding.decisive is None or finding.match is None:
        return None
    monitor = finding.match.re  # (the rule's own pattern: planners/engines/vllm/crash_rules.py)
    said = [line for line in lines if line.text.strip()]
    if not said or not all(monitor.search(line.text) for line in said):
        return None
    return Diagnosis(
        category="none", confidence=0.4, alternatives=["host_oom_killed"],
        cause="the only line is vLLM's engine monitor reporting the engine process gone, which it also prints when "
              "an offline script ends: nothing in the log says the engine was killed or failed",
        evidence=evidence_of([finding.decisive], None, ()),
        next_steps=["if the script's outputs were printed, this is the engine exiting at shutdown: harmless",
                    "if a server is gone, nothing here says why: check the host's kernel log (`dmesg -T | grep -i -E "
                    "'killed process|out of memory'`) and the lines above this one"])
