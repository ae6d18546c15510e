"""A crash no rule explains: quote its last error lines, never dress it up as a known cause.

Also the crashes that show nothing but their end: a SIGKILL with a silent log (most often the OOM killer), a signal
or an exit code.
"""

from __future__ import annotations

import re

from bot.diagnose.types import Finding, LogLine
from bot.diagnose.health import Health
from bot.diagnose.render import last_line
from bot.diagnose.rules import ERROR_SHAPED, FRAMING, GENERIC_ERROR, OPTIONAL_IMPORT, SELF_KILL
from bot.diagnose.signals import DRIVER_LIBRARY_MISSING
from bot.diagnose.structure import TailStructure

SIGKILL_EXIT_CODES = frozenset({137, -9})
#: A compiled extension of the engine that failed to import: vLLM only warns ("Failed to import from vllm._C with
#: ImportError(... undefined symbol ...)") and dies at the first op (vllm-project/vllm#5501).
#: macOS's loader says "Symbol not found" where Linux says "undefined symbol" (vllm-project/vllm#15066).
# (a paste wrapped at "undefined symbol:" puts the symbol on the next line: kvcache-ai/sglang#33)
#: The dynamic loader refusing a compiled library, in Linux's words and macOS's.
_LOADER_REFUSED = r"undefined symbol:(?: \S|\s*$)|cannot open shared object file|Symbol not found: \S"
BROKEN_EXTENSION = re.compile(r"Failed to import from [\w.]{0,80}\._C\b|" + _LOADER_REFUSED)

#: vLLM on another platform than CUDA (a platform plugin such as vllm-ascend, or the CPU/XPU/TPU builds) never loads
#: its CUDA extension, and vllm/_custom_ops.py warns "Failed to import from vllm._C" on every start there
#: (vllm-project/vllm-ascend#1425): on such a platform that warning is routine, not a broken binary.
_OTHER_PLATFORM = re.compile(r"Platform plugin (?!cuda\b)\w+ is activated|Automatically detected platform "
                             r"(?:cpu|npu|xpu|tpu|hpu|neuron)\b", re.IGNORECASE)


def _without_driver(line: LogLine) -> Finding | None:
    """A compiled extension's import that failed on the NVIDIA driver's own library: the extension itself is fine,
    the loader found no driver for it to link against (a CUDA build on a host or container without one, or on AMD
    nodes: ray-project/kuberay#3168). vLLM logs it as a mere warning (vllm/_custom_ops.py), so no rule reads it."""
    driver = DRIVER_LIBRARY_MISSING.search(line.text)
    if driver is None:
        return None
    return Finding(category="cuda_arch_or_driver", confidence=0.55, decisive=line, kind="driver",
                   alternatives=["missing_dependency"],
                   cause=f"a compiled extension could not load the NVIDIA driver's library {driver.group(1)}: no "
                         f"driver on this host (or not mounted into the container)")


def _on_other_platform(lines: list[LogLine]) -> bool:
    """vLLM runs on a CPU / NPU / XPU platform here: its warning that vllm._C did not import is routine then."""
    return any(_OTHER_PLATFORM.search(line.text) for line in lines)


def _broken_extension(lines: list[LogLine]) -> LogLine | None:
    other_platform = _on_other_platform(lines)
    return next((line for line in reversed(lines) if BROKEN_EXTENSION.search(line.text)
                 and not (other_platform and "Failed to import from vllm._C" in line.text)), None)


#: An import failure logged as a mere warning before a crash.
_IMPORT_TROUBLE = re.compile(r"Failed to import|ImportError|No module named|" + _LOADER_REFUSED, re.IGNORECASE)

#: "Error: ..." at the start of a line logged at INFO / DEBUG / WARNING is a notice ("Error: the tokenizer has no chat
#: template; using the default"), not an exception line, so never the crash.
_NOTICE_WORDS = re.compile(r"^(?:Error|ERROR): ")


def _notice(line: LogLine) -> bool:
    return line.level in ("DEBUG", "INFO", "WARNING") and bool(_NOTICE_WORDS.search(line.text))

#: A consequence line that carries the failing process's own error ("Worker failed with error '...'").
_INNER_ERROR = re.compile(r"failed with error:? '(.+?)'?(?:, please check|$)", re.IGNORECASE)

_SIGNAL_EXITS = {139: "SIGSEGV", -11: "SIGSEGV", 134: "SIGABRT", -6: "SIGABRT", 143: "SIGTERM", -15: "SIGTERM",
                 130: "SIGINT", -2: "SIGINT"}


#: Lines of a traceback that a logger prefixed with ERROR: not messages of their own.
_TRACEBACK_PART = re.compile(r'^(?:File "|Traceback \(most recent call last\)|[\^~ ]+$|\.\.\.|During handling'
                             r'|The above)')


#: A logged line with words in it: a paste cut inside a line's prefix leaves "04-30 16", which says nothing.
_WORDED = re.compile(r"[A-Za-z]{2}")


def _logged_error(lines: list[LogLine], health: Health) -> Finding | None:
    """A start that stopped after lines the engine logged at ERROR / CRITICAL, none of them an exception line: they
    are the crash's own words (quoted), never a "still starting"."""
    logged = [line for pos, line in enumerate(lines)
              if line.level in ("ERROR", "CRITICAL") and _WORDED.search(line.text) and not line.code
              and pos not in health.routine
              and not _TRACEBACK_PART.search(line.text) and not OPTIONAL_IMPORT.search(line.text)]
    if not logged:
        return None
    return Finding(category="other", confidence=0.3, decisive=logged[-1], pos=lines.index(logged[-1]),
                   support=[line for line in logged[-3:-1]],
                   cause=f"unrecognised crash; the engine logged: {logged[-1].text[:160]}")


def _reported_exit(lines: list[LogLine], health: Health, structure: TailStructure | None) -> Finding | None:
    """The tail itself reports the process ended badly (an exit code, a signal, the shell's "Killed") after the
    server was last seen alive: a crash, whatever else the tail lacks."""
    exits = [e for e in (structure.exits if structure else []) if e.pos > health.alive_pos
             and (e.signal or (e.code is not None and e.code != 0))]
    if not exits:
        return None
    last = exits[-1]
    line = lines[last.pos]
    if last.signal == "SIGKILL":
        return Finding(category="host_oom_killed", confidence=0.5, decisive=line, pos=last.pos, kind="bare_kill",
                       cause="the tail reports the engine killed with SIGKILL and no error: most often the OOM killer")
    what = f"on {last.signal}" if last.signal else f"with code {last.code}"
    return Finding(category="other", confidence=0.3, decisive=line, pos=last.pos,
                   kind="segfault" if last.signal == "SIGSEGV" else "signal" if last.signal else None,
                   cause=f"the tail reports the engine exited {what} and no error this diagnoser knows")


#: The innermost frame of a bind: zmq's socket, Python's socket module, asyncio/uvicorn's server start.
_BIND_FRAME = re.compile(r"(?:zmq/sugar/socket\.py|/socket\.py|asyncio/base_events\.py) (?:bind|create_server)\b")


_CARETS = re.compile(r"^[\s^~]*$")
#: Frames of the import machinery itself, not of the code that asked for the import.
_IMPORT_MACHINERY = re.compile(r"importlib|<frozen ")
#: importlib's frames of an import in progress (importlib/__init__.py import_module, <frozen importlib._bootstrap>).
_IMPORTING = re.compile(r"importlib[/.\\_][^ ]{0,80} (?:import_module|_gcd_import|_find_and_load\w{0,20}|_load_unlocked"
                        r"|exec_module|_call_with_frames_removed)$")
#: huggingface_hub's retry of a request that failed (utils/_http.py http_backoff: "'<error>' thrown while requesting
#: HEAD https://huggingface.co/<repo>/resolve/main/config.json", then "Retrying in 1s [Retry 1/5].").
_HUB_RETRY = re.compile(r"' thrown while requesting (?:HEAD|GET) https?://\S{1,300}")


def _cut_traceback(lines: list[LogLine], structure: TailStructure | None) -> Finding | None:
    """The tail ends inside a traceback (its exception line is cut off): a crash in progress, never healthy."""
    exc = structure.last_exception if structure else None
    if exc is None or not exc.cut or exc.pos < 0:
        return None
    pos = exc.pos
    while pos > 0 and _CARETS.match(lines[pos].text):
        pos -= 1  # (Python 3.11+ underlines the failing call: the call's line is the one to quote)
    innermost = exc.innermost(1)
    if innermost and _BIND_FRAME.search(f"{innermost[0].path} {innermost[0].function}"):
        # Cut inside a socket's bind: the line lost is most often "Address already in use" (vllm-project/vllm#7196);
        # only when the message is lost, since a bind fails for other reasons too (a wrong address, EADDRNOTAVAIL).
        return Finding(category="port_in_use", confidence=0.45, decisive=lines[pos], pos=pos,
                       cause="the tail ends inside a socket's bind (its error line is cut off): most often the port "
                             "is taken", alternatives=["other"])
    retried = next((at for at in range(exc.pos - 1, -1, -1) if _HUB_RETRY.search(lines[at].text)), None)
    if retried is not None:
        # A request to the Hub failed and was being retried just before: the start that then broke off was most
        # likely fetching the model (tenstorrent/tt-inference-server#4638); the exception line is lost, so modest.
        return Finding(category="hub_access", confidence=0.45, decisive=lines[retried], pos=retried,
                       support=[lines[pos]], kind="network", alternatives=["other"],
                       cause="a request to the Hugging Face Hub failed and was being retried, then the start broke "
                             "off inside a traceback (its exception line is cut off)")
    if innermost and _IMPORTING.search(f"{innermost[0].path} {innermost[0].function}"):
        # Cut inside importlib's machinery: an import was failing (the module's own top level would be the next
        # frame), most often a package missing or built for something else (a source tree never built: its
        # "No module named 'vllm._version'" warning above, 1Cat-vLLM#195); modest, the error itself is lost.
        caller = next((frame for frame in reversed(exc.frames) if not _IMPORT_MACHINERY.search(frame.path)), None)
        where = f"{'/'.join(caller.path.split('/')[-2:])} ({caller.function})" if caller else "?"
        return Finding(category="missing_dependency", confidence=0.45, decisive=lines[pos], pos=pos,
                       alternatives=["other"], kind="cut_import",
                       cause=f"the tail ends inside an import (its exception line is cut off): a package did not "
                             f"import, started by {where}")
    return Finding(category="other", confidence=0.3, decisive=lines[pos], pos=pos,
                   cause=f"the tail ends inside a traceback (its exception line is cut off); innermost frame: "
                         f"{exc.where() or '?'}")


def _error_lines(lines: list[LogLine]) -> tuple[list[tuple[int, LogLine]], list[tuple[int, LogLine]]]:
    """(the exception-shaped lines, the consequence lines that name no cause) of the tail."""
    errors = [(pos, line) for pos, line in enumerate(lines)
              if line.text and not line.code and GENERIC_ERROR.search(line.text) and not FRAMING.search(line.text)
              and not _notice(line)]
    framing = [(pos, line) for pos, line in enumerate(lines) if line.text and FRAMING.search(line.text)]
    if framing and not errors:
        # No exception line, but the tail holds other error-shaped lines (a linker's or compiler's "error:", a C
        # assert): those are the cause to quote, never "printed above this tail".
        errors = [(pos, line) for pos, line in enumerate(lines)
                  if line.text and not line.code and line.level not in ("DEBUG", "INFO")
                  and ERROR_SHAPED.search(line.text) and not FRAMING.search(line.text)
                  and not _TRACEBACK_PART.search(line.text) and not OPTIONAL_IMPORT.search(line.text)]
    return errors, framing


def _last_errors(lines: list[LogLine], errors: list[tuple[int, LogLine]], framing: list[tuple[int, LogLine]],
                 first: int) -> Finding | None:
    """The last (up to three different) error lines quoted, with an import that failed above them."""
    distinct: list[LogLine] = []
    for _, line in reversed(errors):
        if all(line.text != seen.text for seen in distinct):
            distinct.append(line)
        if len(distinct) == 3:
            break
    if not distinct:
        return None
    decisive = distinct[0]
    # (on a CPU / NPU / XPU platform vLLM prints the same warning harmlessly: not the driver then)
    driver = _without_driver(decisive) if decisive.level == "WARNING" and not _on_other_platform(lines) else None
    if driver is not None:
        driver.support = distinct[1:]
        return driver
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


def _consequence_only(framing: list[tuple[int, LogLine]], self_kill: bool) -> Finding:
    """Only consequences in the tail ("Engine core initialization failed"): the failing process's own words when a
    consequence quotes them, else where the cause was printed."""
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


def _without_error_lines(lines: list[LogLine], exit_code: int | None, health: Health,
                         structure: TailStructure | None, self_kill: bool) -> Finding | None:
    """A tail with no exception line: what the engine logged at ERROR, a cut traceback, a broken compiled
    extension, the reported exit, the exit code."""
    server_up = health.alive_pos >= 0
    logged = None if server_up else _logged_error(lines, health)
    if logged is not None:
        return logged
    broken = None if server_up else _broken_extension(lines)
    cut = None if server_up and exit_code in (None, 0) else _cut_traceback(lines, structure)
    if cut is not None and broken is None:
        return cut
    ended = _reported_exit(lines, health, structure) if cut is None else None
    if ended is not None and exit_code in (None, 0):
        return ended
    if broken is not None:
        driver = _without_driver(broken)
        if driver is not None:
            return driver
        # A traceback cut off after the warning is that failure surfacing: quoted as support, not as the cause.
        return Finding(category="missing_dependency", confidence=0.5, decisive=broken, kind="binary",
                       support=[cut.decisive] if cut is not None and cut.decisive is not None else [],
                       cause="a compiled extension failed to import (quoted) and the start went no further: a binary "
                             "built against another torch / CUDA / Python")
    return exit_only(lines, exit_code, self_kill)


def exit_only(lines: list[LogLine], exit_code: int | None, self_kill: bool) -> Finding | None:
    if exit_code in SIGKILL_EXIT_CODES and not self_kill:
        return Finding(category="host_oom_killed", confidence=0.55, decisive=last_line(lines),
                       cause=f"the engine was killed by SIGKILL (exit {exit_code}) with no error in its log: most "
                             f"often the host OOM killer", kind="bare_kill")
    if exit_code not in (None, 0):
        signal = _SIGNAL_EXITS.get(exit_code)
        cause = (f"the engine stopped on {signal} (exit {exit_code}) with no error in its log" if signal else
                 f"the engine exited with code {exit_code} and no error in the log tail")
        return Finding(category="other", confidence=0.3, decisive=last_line(lines), cause=cause,
                       kind="segfault" if signal == "SIGSEGV" else "signal" if signal else None)
    return None


def unrecognised(lines: list[LogLine], exit_code: int | None, health: Health,
                 structure: TailStructure | None = None) -> Finding | None:
    """A crash no rule explains, told by its last error lines, its consequences, or only by how it ended; None for
    a tail whose errors a running server outlived."""
    errors, framing = _error_lines(lines)
    # (lines the healthy path explains: a request the server refused and answered)
    errors = [(pos, line) for pos, line in errors if pos not in health.routine]
    self_kill = any(SELF_KILL.search(line.text) for line in lines)
    if not (errors or framing):
        return _without_error_lines(lines, exit_code, health, structure, self_kill)
    last = max(pos for pos, _ in errors + framing)
    first = min(pos for pos, _ in errors + framing)
    alive_after = health.alive_pos > last and not health.died_while_up
    if exit_code in (None, 0) and (alive_after or (0 <= health.ready_pos < first and not framing)):
        return None  # request-level errors of a server that kept running
    found = _last_errors(lines, errors, framing, first) or _consequence_only(framing, self_kill)
    return _died_serving(found, health) if found is not None else None


def engine_death(lines: list[LogLine], health: Health) -> Finding | None:
    """The engine said it is gone under a running server and no error line says more (V0's "MQLLMEngine is already
    dead, terminating server process" at CRITICAL after the requests it served): the crash is that line."""
    if not health.died_while_up:
        return None
    decisive = lines[health.dead_pos]
    return _died_serving(Finding(category="other", confidence=0.3, decisive=decisive, pos=health.dead_pos,
                                 cause=decisive.text[:160], kind="root_cause_elsewhere"), health)


def _died_serving(finding: Finding, health: Health) -> Finding:
    """The engine said it is gone (EngineDeadError, SGLang's scheduler giving up) after the server had answered
    requests: a crash of a running server, whose HTTP port may still answer; said so rather than "failed to start"."""
    if not (health.died_while_up and health.served_pos >= 0) or finding.kind not in (None, "root_cause_elsewhere"):
        return finding
    finding.kind = "died_serving"
    finding.confidence = max(finding.confidence, 0.5)  # a crash for certain; only its cause is not in the tail
    finding.cause = ("the engine died while the server was serving requests (its HTTP port may still answer, every "
                     f"request now fails): {finding.decisive.text[:160] if finding.decisive else finding.cause}")
    return finding


def error_after_ready(lines: list[LogLine], health: Health) -> LogLine | None:
    """The last error line logged after the server came up with nothing alive after it: the tail ends on it, so it
    may be one request's error or the crash (``unrecognised`` reads it as a request's; the verdict must say which it
    cannot tell)."""
    if health.ready_pos < 0:
        return None
    errors, _ = _error_lines(lines)
    late = [line for pos, line in errors if pos not in health.routine and pos > health.ready_pos
            and pos > health.alive_pos]
    return late[-1] if late else None


#: An import that failed anywhere before the engine gave up on a model (a module, a compiled extension).
_FAILED_IMPORT = re.compile(r"Failed to import from [\w.]{1,80} with \w{0,40}Error|No module named '[\w.]{1,80}'|"
                            + _LOADER_REFUSED)


def import_behind_inspection(finding: Finding, lines: list[LogLine]) -> None:
    """vLLM inspects a model's module in a subprocess; when the tail shows an import that failed before the
    "failed to be inspected", that import is the cause (a missing dependency), not the architecture."""
    if finding.rule not in ("architecture_inspection_failed", "registry_failed") or finding.pos < 0:
        return
    failed = next((line for line in lines[:finding.pos] if _FAILED_IMPORT.search(line.text)
                   and not OPTIONAL_IMPORT.search(line.text)), None)
    if failed is None:
        return
    if finding.decisive is not None:
        finding.support.append(finding.decisive)
    finding.category, finding.kind, finding.decisive, finding.match = "missing_dependency", "module", failed, None
    finding.cause = "an import failed (quoted) and the engine's model inspection died of it"
    finding.alternatives = ["unsupported_architecture"]
