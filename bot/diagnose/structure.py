"""Read a crash tail the way an expert does: the exceptions with their frames and chained causes, how the process
ended, and how far the start-up got.

``parse_structure(lines)`` returns a ``TailStructure``:
- ``exceptions``: every exception line, with the traceback frames printed above it (file paths and functions,
  innermost last) and the exception it was chained from ("The above exception was the direct cause of the following
  exception" / "During handling of the above exception, another exception occurred"); an exception line without a
  traceback (a one-line paste) is kept too, with no frames.
- ``exits``: how the process ended when the tail says (an exit code, a signal, the shell's "Killed" in any locale).
- ``milestones``: the start-up phases the log reached, in order (arguments parsed, weights loading, weights loaded
  with their size, KV cache allocated, CUDA graphs capturing / captured, server up).
The diagnoser's structural rules (bot/diagnose/structure_rules.py) decide a category from these; the advice quotes
them (the exception, the phase reached). Traceback shapes are CPython's (traceback.py), the milestone lines the
engines' own (tests/data/engines/*-log-lines.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bot.diagnose.types import LogLine
from bot.diagnose.locale import KILLED

_HEADER = re.compile(r"Traceback \(most recent call last\):?\s*$")
#: (faulthandler's "line 77 in capture_begin" has no comma)
_FRAME = re.compile(r'^File "([^"]{1,500})", line (\d+)(?:,? in (\S{1,200}))?')
#: Stacks printed innermost first: Python's faulthandler after a fatal signal ("Fatal Python error: Segmentation
#: fault", then "Stack (most recent call first):" or "Current thread 0x... (most recent call first):", CPython
#: Python/traceback.c) and UCX's backtrace of a caught signal ("==== backtrace (tid:   4597) ====", openucx
#: src/ucs/debug/debug.c).
_NEWEST_FIRST = re.compile(r"^(?:Stack|(?:Current t|T)hread 0x[0-9a-f]{1,16}(?: \[[^\]\n]{0,60}\])?) \(most recent "
                           r"call first\):\s*$|^=+ backtrace \(tid: {0,8}\d{1,10}\) =+$")
#: A native frame of those backtraces: UCX's " 1 0x000000000004f03d ncclLaunchPrepare()  /src/enqueue.cc:574" and
#: gdb's / glibc's "#3  0x00007f3c5f628350 in ncclLaunchPrepare () from /usr/lib/libnccl.so.2" (UCX's frame number
#: may be gone: a paste reader takes a column of line numbers off, bot/diagnose/paste.py).
_NATIVE_FRAME = re.compile(r"^(?:\d{1,3} {1,4})?0x[0-9a-f]{4,16} (\S{1,200}?)\(\)\s{1,8}(\S{1,400}?):\d{1,7}$"
                           r"|^#\d{1,3}\s{1,4}0x[0-9a-f]{4,16} in (\S{1,200}?) \([^)\n]{0,200}\)(?: (?:from|at) (\S{1,400}))?")
_CAUSE = re.compile(r"^The above exception was the direct cause of the following exception")
_CONTEXT = re.compile(r"^During handling of the above exception, another exception occurred")
#: An exception line right after frames: any dotted class name, then ": message" or nothing.
_AFTER_FRAMES = re.compile(r"^((?:[A-Za-z_]\w{0,80}\.){0,8}[A-Za-z_]\w{0,80})(?:: ?(.*))?$")
#: An exception line anywhere: the class name must say it is one.
_STANDALONE = re.compile(
    r"^((?:[A-Za-z_]\w{0,80}\.){0,8}(?:[A-Z]\w{0,80})?(?:Error|Exception|Exit|Interrupt|Failure))(?:: ?(.*))?$")
#: An exception pasted as its repr: ValueError("type fp8e4nv not supported in this architecture ...").
_REPR = re.compile(r"^((?:[A-Za-z_]\w{0,80}\.){0,8}[A-Z]\w{0,80}(?:Error|Exception))\((['\"])(.{0,2000})\2\)$")
#: An exception quoted after a few words of prose on its line ("2、Llama-3.2-1B-Instruct model:  AttributeError: ...",
#: "error message: ValueError: ..."): the words end at the line's first colon, the class must say it is one and
#: a message must follow.
_IN_PROSE = re.compile(r"^[^:：\n]{1,60}[:：]\s{1,4}((?:[A-Za-z_]\w{0,80}\.){0,8}[A-Z]\w{0,80}(?:Error|Exception)): (\S.*)$")
#: How long (lines) frames wait for their exception line while other processes' lines interleave.
FRAME_PATIENCE = 60

_EXIT = re.compile(
    r"exit ?code[=:]? ?(-?\d{1,3})\b|exited with (?:code|status) (-?\d{1,3})\b|returned non-zero exit status (\d{1,3})"
    r"|\bsignal (\d{1,2})\b|Signals\.(SIG[A-Z]{2,6})|code=killed, status=(\d{1,2})|code=exited, status=(\d{1,3})",
    re.IGNORECASE)
_KILLED = re.compile(r"^" + KILLED + r"\s{0,20}(?:\(core dumped\))?$|(?<!\d)\d{1,12}:\s{1,20}\d{1,12}\s{1,40}" + KILLED
                     + r"(?:\s|$)|^\[\d{1,6}\][+-]?\s{1,20}" + KILLED + r"(?:\s|$)")

#: Start-up milestones in the order a launch reaches them: (phase, pattern, group holding GB/GiB or 0).
MILESTONES: tuple[tuple[str, re.Pattern[str], int], ...] = (
    ("args_parsed", re.compile(r"server_args=(?:ServerArgs\(|\{)|non-default args:|args: Namespace\(|vLLM API server "
                               r"version"), 0),
    ("weights_loading", re.compile(r"Load weight begin|Loading (?:safetensors|pt|bin) checkpoint shards|Starting to "
                                   r"load model|Multi-thread loading shards|Loading weights with"), 0),
    # vLLM's drafter (EAGLE / MTP / draft model) loads after the target's weights ("Loading weights took") and before
    # "Model loading took": vllm/v1/worker/gpu_model_runner.py load_model's logger.info("Loading drafter model...").
    # Ordered before weights_loaded so a tail that went on to "Model loading took N GiB" still reports that phase.
    ("drafter_loading", re.compile(r"Loading drafter model\.\.\."), 0),
    ("weights_loaded", re.compile(r"Load weight end\..{0,200}?mem usage=([\d.]+) ?GB|Model loading took ([\d.]+) ?GiB"
                                  r"|Loading model weights took ([\d.]+) ?GB|Loading weights took"), -1),
    ("kv_allocated", re.compile(r"KV Cache is allocated|Post-capture KV sizing: KV cache allocated"
                                r"|[GXNHCT]PU(?: \+ host)? KV cache size|# ?GPU blocks:"
                                r"|max_total_num_tokens="
                                r"|Available KV cache memory"), 0),
    # SGLang's EAGLE worker captures its drafter's graphs too (sglang/srt/speculative/eagle_worker.py: "Capture draft
    # cuda graph begin. This can take up to several minutes. avail mem=...", "Capture draft extend cuda graph begin");
    # SGLang 0.5.2x names the role and the pass (model_runner_components/cuda_graph_setup.py: "Capture target decode
    # CUDA graph begin.", "Capture draft extend CUDA graph begin.", "Capture Frozen-KV MTP draft cuda graph begin.").
    ("graphs_capturing", re.compile(r"Capture (?:[\w-]{1,20} ){0,4}cuda graph begin"
                                    r"|Capturing (?:CUDA|cuda) ?graphs?|Capturing cudagraphs|Capturing batches"
                                    r"|Capturing the model for CUDA graphs"
                                    # (vLLM V1's per-size DEBUG line, compilation/cuda_graph.py)
                                    r"|Capturing a cudagraph on\b",
                                    re.IGNORECASE), 0),
    ("graphs_captured", re.compile(r"Capture (?:[\w-]{1,20} ){0,4}cuda graph end"
                                   r"|Graph capturing finished", re.IGNORECASE), 0),
    ("server_up", re.compile(r"fired up and ready to roll|Application startup complete|Uvicorn running on"), 0),
)
#: Words every milestone line holds (checked with ``in`` before any regex runs): most lines reach no milestone.
_MILESTONE_WORDS = ("ServerArgs", "args", "version", "eight", "load", "Load", "shards", "KV", "blocks",
                    "max_total_num_tokens", "raph", "ready", "startup complete", "Uvicorn", "apturing")
#: Words an exit report always holds (checked with ``in`` before the regex runs).
_EXIT_WORDS = ("exit", "signal", "status", "Exit", "Signal", "Status", "EXIT")
PHASE_WORDS = {
    "args_parsed": "arguments parsed", "weights_loading": "loading the weights",
    "drafter_loading": "loading the drafter model", "weights_loaded": "weights loaded",
    "kv_allocated": "KV cache allocated", "graphs_capturing": "capturing CUDA graphs",
    "graphs_captured": "CUDA graphs captured", "server_up": "server up",
}


@dataclass
class Frame:
    path: str
    function: str
    code: str = ""  # the source line printed under it


@dataclass
class RaisedException:
    qualname: str  # "torch.OutOfMemoryError"
    message: str
    pos: int
    frames: list[Frame] = field(default_factory=list)  # outermost first, innermost last
    chained_from: RaisedException | None = None  # the exception this one was raised from / while handling
    chain: str | None = None  # "cause" ("direct cause") or "context" ("during handling")
    cut: bool = False  # the tail ends inside this traceback: frames but no exception line (qualname "")

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]

    def innermost(self, count: int = 6) -> list[Frame]:
        return self.frames[-count:][::-1]

    def where(self) -> str:
        """The innermost frame as 'package/path.py (function)', for advice."""
        if not self.frames:
            return ""
        frame = self.frames[-1]
        path = re.sub(r"^.*/(?:site-packages|dist-packages)/", "", frame.path)
        if path == frame.path:
            path = "/".join(frame.path.split("/")[-3:])
        return f"{path} ({frame.function})" if frame.function else path

    def root(self) -> RaisedException:
        """The first exception of its chain: the original failure."""
        exc = self
        while exc.chained_from is not None:
            exc = exc.chained_from
        return exc


@dataclass(frozen=True)
class ProcessExit:
    pos: int
    code: int | None
    signal: str | None  # "SIGKILL", ...


@dataclass(frozen=True)
class Milestone:
    phase: str
    pos: int
    gib: float | None = None


@dataclass
class TailStructure:
    exceptions: list[RaisedException] = field(default_factory=list)
    exits: list[ProcessExit] = field(default_factory=list)
    milestones: list[Milestone] = field(default_factory=list)

    @property
    def last_exception(self) -> RaisedException | None:
        return self.exceptions[-1] if self.exceptions else None

    def exception_at(self, pos: int) -> RaisedException | None:
        return next((exc for exc in self.exceptions if exc.pos == pos), None)

    @property
    def last_phase(self) -> Milestone | None:
        order = {phase: i for i, (phase, _, _) in enumerate(MILESTONES)}
        return max(self.milestones, key=lambda m: (order[m.phase], m.pos), default=None)

    def phase_words(self) -> str | None:
        last = self.last_phase
        if last is None:
            return None
        size = f" ({last.gib:.1f} GB)" if last.gib else ""
        return f"{PHASE_WORDS[last.phase]}{size}"


_SIGNALS = {9: "SIGKILL", 137: "SIGKILL", -9: "SIGKILL", 11: "SIGSEGV", 139: "SIGSEGV", -11: "SIGSEGV",
            6: "SIGABRT", 134: "SIGABRT", -6: "SIGABRT", 15: "SIGTERM", 143: "SIGTERM", -15: "SIGTERM"}


def _exit_of(pos: int, text: str) -> ProcessExit | None:
    if _KILLED.search(text):
        return ProcessExit(pos, None, "SIGKILL")
    if not any(word in text for word in _EXIT_WORDS):
        return None
    match = _EXIT.search(text)
    if match is None:
        return None
    number = next((g for g in match.groups()[:4] if g), None) or match.group(7)
    signal_name = match.group(5)
    if match.group(6):
        return ProcessExit(pos, None, _SIGNALS.get(int(match.group(6))))
    if signal_name:
        return ProcessExit(pos, None, signal_name.upper())
    code = int(number) if number else None
    signal = _SIGNALS.get(code) if code is not None and (code < 0 or code > 128 or match.group(4)) else None
    if match.group(4):
        code = None
    return ProcessExit(pos, code, signal)


def _milestone_of(pos: int, text: str) -> Milestone | None:
    if not any(word in text for word in _MILESTONE_WORDS):
        return None
    for phase, pattern, _ in MILESTONES:
        match = pattern.search(text)
        if match:
            size = next((g for g in match.groups() if g), None) if match.groups() else None
            return Milestone(phase, pos, float(size) if size else None)
    return None


@dataclass
class _Stack:
    """The traceback one process is printing (processes interleave their lines in one log)."""

    frames: list[Frame] = field(default_factory=list)
    frames_at: int = -1  # position of its last frame
    stack_at: int = -1  # position of its last frame or source line
    newest_first: bool = False  # printed innermost first (faulthandler, a native backtrace): kept innermost last

    def add(self, frame: Frame, pos: int) -> None:
        if self.newest_first:
            self.frames.insert(0, frame)
        else:
            self.frames.append(frame)
        self.frames_at = self.stack_at = pos


#: Which process printed a line: vLLM/Ray's "(Worker_TP1 pid=3928602)", torch's "[rank1]:", SGLang's "TP1".
_PROCESS = re.compile(r"\bpid=(\d+)|^\[rank(\d+)\]|\[[\d-]+ [\d:.]+ (TP\d+)\]")


def _process_of(line: LogLine) -> str:
    match = _PROCESS.search(line.raw[:200])
    return next((g for g in match.groups() if g), "") if match else ""


def _exception(text: str, stack: _Stack, pos: int) -> tuple[str, str, bool] | None:
    """(class, message, has frames) when ``text`` is an exception line."""
    recent = bool(stack.frames) and pos - stack.frames_at <= FRAME_PATIENCE
    match = (_AFTER_FRAMES if recent else _STANDALONE).match(text)
    if match is None:
        pasted = _REPR.match(text)
        if pasted:
            return pasted.group(1), pasted.group(3), recent
        quoted = None if recent else _IN_PROSE.match(text)
        return (quoted.group(1), quoted.group(2).strip(), False) if quoted else None
    if recent and not ("." in match.group(1) or match.group(2) is not None or match.group(1)[:1].isupper()):
        return None
    return match.group(1), (match.group(2) or "").strip(), recent


def parse_structure(lines: list[LogLine]) -> TailStructure:
    """The exceptions, process exits and start-up milestones of a tail (``lines`` in time order)."""
    out = TailStructure()
    stacks: dict[str, _Stack] = {}
    chain: str | None = None
    for pos, line in enumerate(lines):
        text = line.text
        if not text:
            continue
        # Which process printed the line matters only inside tracebacks (interleaved workers).
        tracing = line.code or text.startswith('File "') or "Traceback" in text or any(
            st.frames for st in stacks.values())
        stack = stacks.setdefault(_process_of(line) if tracing else "", _Stack())
        newest_first = _NEWEST_FIRST.search(text)
        if newest_first or _HEADER.search(text):
            stack.frames, stack.frames_at, stack.newest_first = [], pos, bool(newest_first)
            continue
        frame = _FRAME.match(text)
        if frame:
            stack.add(Frame(frame.group(1), frame.group(3) or ""), pos)
            continue
        native = _NATIVE_FRAME.match(text)
        if native:
            stack.newest_first = stack.newest_first or not stack.frames  # (these come innermost first)
            stack.add(Frame(native.group(2) or native.group(4) or "", native.group(1) or native.group(3)), pos)
            continue
        if _CAUSE.match(text) or _CONTEXT.match(text):
            chain = "cause" if _CAUSE.match(text) else "context"
            continue
        if line.code:
            latest = stack.frames[0 if stack.newest_first else -1] if stack.frames else None
            if latest is not None and not latest.code:
                latest.code = text[:300]
            stack.stack_at = pos
            continue
        found = _exception(text, stack, pos)
        if found is not None:
            previous = out.exceptions[-1] if out.exceptions and chain else None
            qualname, message, framed = found
            out.exceptions.append(RaisedException(qualname, message, pos, stack.frames if framed else [], previous,
                                                  chain if previous else None))
            stack.frames, stack.newest_first, chain = [], False, None
            continue
        exit_ = _exit_of(pos, text)
        if exit_ is not None:
            out.exits.append(exit_)
        milestone = _milestone_of(pos, text)
        if milestone is not None:
            out.milestones.append(milestone)
    for stack in stacks.values():
        if stack.frames and len(lines) - 1 - stack.frames_at <= FRAME_PATIENCE:
            out.exceptions.append(RaisedException("", "", stack.stack_at, stack.frames, cut=True))
    out.exceptions.sort(key=lambda exc: exc.pos)
    return out
