"""A crash no phrase rule knows, placed the way an expert places it: by the package its exception was raised in and
by the vocabulary of its error lines, never by one message learned from one log.

An expert who meets a new wording still knows where it came from: a traceback whose innermost frames are in
``flashinfer/jit/`` or ``torch/_inductor/`` is a kernel build; one in ``speculative/`` or ``spec_decode/`` is the
drafter; ``pynccl`` / ``torch/distributed/`` is multi-GPU communication; a ``ModuleNotFoundError`` is a missing
package whatever it says; "bind" + "in use" is a port clash on whichever port. Each ``Area`` says this as data:
where (frame paths, the engines' and their libraries' own source layout: github.com/sgl-project/sglang python/
sglang/srt, github.com/vllm-project/vllm vllm/, flashinfer, triton, torch), which exception classes, and which
words of the error lines. ``place(finding, ...)`` scores every area on the unrecognised crash's evidence (the
exception chain and its innermost frames count most, the last error lines of the tail less) and moves the finding
into the best one when the evidence is clear (a margin over the next); the verdict stays modest (0.45-0.6) and
names what it is unsure between. The tail's start-up phase is never evidence here: a phase says when, not why.
The areas themselves are data, in bot/diagnose/area_table.py; a tail that ends on error lines without any exception
to place is bot/diagnose/error_end.py.
"""

from __future__ import annotations

import re

from bot.diagnose.area_table import AREAS, Area
from bot.diagnose.native_source import native_sources
from bot.diagnose.optional import OPTIONAL_IMPORT
from bot.diagnose.rules import ERROR_SHAPED
from bot.diagnose.structure import Frame, RaisedException, TailStructure
from bot.diagnose.types import Finding, LogLine


#: How much each kind of evidence weighs: where the exception was raised counts most.
_INNER_FRAME, _OUTER_FRAME, _CLASS, _MESSAGE, _TAIL_LINE = 3, 2, 3, 2, 1
#: The best area needs at least this score, and this margin over the next.
MIN_SCORE, MIN_MARGIN = 3, 2
#: How many error lines at the end of the tail are read as evidence.
TAIL_ERRORS = 8


#: An exception named inside a line (a traceback pasted onto one line: 'File "...", line 5, in f raise X(...) X: msg').
_INLINE_EXCEPTION = re.compile(r"(?:^|[\s(\[:'\"])((?:[a-z_]\w{0,40}\.){0,6}[A-Z]\w{0,60}(?:Error|Exception|Failure))"
                               r"(?::\s?|\s*$)")
_INLINE_FRAME = re.compile(r'File "([^"]{1,500})", line \d{1,7}, in (\S{1,200})')


def _inline(line: LogLine | None) -> RaisedException | None:
    """The last exception a line names, with the frames pasted before it on the same line."""
    if line is None:
        return None
    found = list(_INLINE_EXCEPTION.finditer(line.text[:20000]))
    if not found:
        return None
    last = found[-1]
    frames = [Frame(m.group(1), m.group(2)) for m in _INLINE_FRAME.finditer(line.text[:last.start() + 1])]
    return RaisedException(last.group(1), line.text[last.end():last.end() + 2000].strip(), -1, frames)


def _chain(exc: RaisedException | None) -> list[RaisedException]:
    out: list[RaisedException] = []
    while exc is not None and len(out) < 4:
        out.append(exc)
        exc = exc.chained_from
    return out


_INSTALLED = re.compile(r"[/\\](?:site|dist)-packages[/\\]")
_IMPORTS = re.compile(r"^\s*(?:from [\w.]{1,200} import\b|import [\w.]{1,200})")


def _raised_at_import(exc: RaisedException) -> bool:
    """The exception was raised while an installed package was being imported: one of the innermost frames is a
    module's top level (``<module>``) under site-packages, and not the traceback's own entry point. Whatever its class
    (an AttributeError in lightop/__init__.py reading a version, gpustack/gpustack#5305), that package does not import
    here."""
    inner = exc.innermost(4)
    for index, frame in enumerate(exc.frames):
        if index == 0 or frame not in inner or frame.function != "<module>" or not _INSTALLED.search(frame.path):
            continue
        caller = exc.frames[index - 1]
        # (imported, not run: the frame above it is an import statement or importlib's own machinery; a module run
        # with python -m is a <module> frame too, called from runpy)
        if _IMPORTS.match(caller.code) or "importlib" in caller.path:
            return True
    return False


def _score(area: Area, chain: list[RaisedException], error_lines: list[str], sources: list[str]) -> tuple[int, bool]:
    """(score, whether any of it is where the exception was raised); ``sources``: the native files it names."""
    score, placed = 0, False
    if area.frames is not None and any(area.frames.search(path) for path in sources):
        score, placed = score + _INNER_FRAME, True
    for exc in chain:
        if area.category == "missing_dependency" and exc.frames and _raised_at_import(exc):
            # (weighed above a file path alone: where an import failed says more than which package it was in)
            score, placed = score + _INNER_FRAME + _MESSAGE, True
        if area.frames is not None:
            # Each frame with the call its source line makes (the next frame's function): where the innermost was
            # raised, and, when a paste cut the innermost frame's own line ("in get_"), what it was calling.
            frames = [f"{frame.path} {frame.function} " + " ".join(_CALLED.findall(frame.code))
                      for frame in exc.innermost(8)]
            if any(area.frames.search(text) for text in frames[:3]):
                score, placed = score + _INNER_FRAME, True
            elif any(area.frames.search(text) for text in frames[3:]):
                score, placed = score + _OUTER_FRAME, True
        if area.classes is not None and area.classes.search(exc.name):
            score += _CLASS
        if area.words is not None and area.words.search(exc.message[:2000]):
            score += _MESSAGE
    if area.words is not None:
        score += _TAIL_LINE * min(2, sum(bool(area.words.search(text)) for text in error_lines))
    return score, placed


#: Traceback lines that are not messages (their words are the frames', counted as frames).
_FRAME_LINE = re.compile(r'^(?:File "|Traceback \(most recent call last\)|[\s^~]+$)')


def _error_lines(finding: Finding, lines: list[LogLine]) -> list[str]:
    quoted = [line for line in [finding.decisive, *finding.support] if line is not None]
    end = [line for line in lines[-60:] if line.text and not line.code and not _FRAME_LINE.search(line.text) and (
        line.level in ("ERROR", "CRITICAL") or (line.level != "INFO" and line.level != "DEBUG"
                                                and ERROR_SHAPED.search(line.text)))][-TAIL_ERRORS:]
    seen: list[str] = []
    for line in quoted + end:
        if line.text not in seen and not OPTIONAL_IMPORT.search(line.text):
            seen.append(line.text[:2000])
    return seen


#: "other" findings placed only when a traceback in the tail was raised in an area: a native or kernel crash (a CUDA
#: illegal access inside a JIT-built kernel's code; a bare segfault stays ``other``, and so does one inside the drafter's
#: code, an engine bug of that path: ``place``), and a tail whose
#: own error line is elsewhere but whose frames are here ("Engine core initialization failed" under a traceback
#: that runs through flashinfer/jit/).
NATIVE_KINDS = ("kernel_crash", "segfault", "root_cause_elsewhere")


#: Speculative decoding is on in this launch, as the engines print their settings: vLLM's engine config line
#: ("speculative_config=SpeculativeConfig(method='eagle3', ...)", "non-default args: {... 'speculative_config': {...")
#: and its "Loading drafter model..." (vllm/v1/worker/gpu_model_runner.py), SGLang's
#: "server_args=ServerArgs(... speculative_algorithm='EAGLE3' ...)", or the flags on a pasted command line.
SPECULATIVE_ON = re.compile(
    r"speculative_config=SpeculativeConfig\(|'speculative_config': \{|\"speculative_config\": \{"
    r"|speculative_algorithm='(?!None')\w|'speculative_algorithm': '(?!None')\w"  # (0.5.2x logs a dict)
    r"|--speculative[-_](?:algorithm|config|model|draft)|Loading drafter model")
#: What a plan or a tail that runs speculative decoding adds to the speculative area: a prior, never enough alone.
_SPECULATIVE_PRIOR = 1


#: A crash in the phase an area needs (CUDA graphs being captured: begun, never ended) weighs for that area.
_PHASE_PRIOR = 2


def _raised_in_phase(area: Area, chain: list[RaisedException]) -> bool:
    """Whether an exception of the chain was raised inside one of the functions only the area's phase runs, or says
    in its message that it was raised in that phase."""
    if area.phase_words is not None and any(area.phase_words.search(exc.message[:2000]) for exc in chain):
        return True
    pattern = area.phase_functions
    if pattern is None:
        return False
    for exc in chain:
        frames = exc.innermost(3)
        if any(pattern.search(frame.function or "") for frame in frames):
            return True
        # A traceback cut below its innermost frame still shows the call that frame was making
        # ("cuda_graph_memory_bytes = self.model_runner.capture_model()"): the exception came from inside it.
        if frames and any(pattern.search(name) for name in _CALLED.findall(frames[0].code)):
            return True
    return False


_CALLED = re.compile(r"(\w{1,80})\(")


def _phase_when(structure: TailStructure, pos: int) -> str | None:
    """The last start-up milestone before the crash line ("graphs_capturing": the capture began, never ended)."""
    before = [m for m in structure.milestones if pos < 0 or m.pos < pos]
    return before[-1].phase if before else None


def place(finding: Finding, lines: list[LogLine], structure: TailStructure, speculative: bool = False) -> None:
    """Move an unrecognised crash (``other``, nothing known) into the area its evidence points at, in place.
    ``speculative``: the plan runs speculative decoding (the tail may say so too)."""
    if finding.category != "other":
        return
    native = finding.kind in NATIVE_KINDS
    if not native and (finding.rule is not None or finding.kind not in (None, "import_warning")):
        return
    exc = structure.exception_at(finding.pos) or structure.last_exception
    chain = _chain(exc) or [inline for inline in (_inline(finding.decisive),) if inline is not None]
    # Tracebacks of other processes in the tail (a worker's, cut before its exception line) are evidence too.
    chain += [other for other in reversed(structure.exceptions) if other.frames and other not in chain][:2]
    error_lines = _error_lines(finding, lines)
    # (a kernel crash keeps its reading: an illegal memory access is the kernel's bug wherever its check sits)
    sources = [] if native else native_sources(chain, error_lines)
    named = next((exc for exc in chain if exc.name), None)  # (a traceback cut before its exception line names none)
    scores = [(0, False) if area.refusal and any(area.refusal.search(exc.message) for exc in chain)
              or area.bookkeeping and area.bookkeeping.search(named.name if named else "")
              or area.message_words and named and named.message and not area.message_words.search(named.message)
              else _score(area, chain, error_lines, sources) for area in AREAS]
    if speculative or any(SPECULATIVE_ON.search(line.text) for line in lines if line.text):
        scores = [(score + _SPECULATIVE_PRIOR, placed) if area.category == "speculative_config_invalid"
                  else (score, placed) for area, (score, placed) in zip(AREAS, scores)]
    reached = _phase_when(structure, finding.pos)
    if finding.kind == "kernel_crash" and reached == "graphs_capturing":
        # A kernel crash while CUDA graphs were being captured (the capture began and never ended): the taxonomy's
        # "failure during CUDA graph capture", with the kernel bug as the alternative.
        finding.category, finding.kind, finding.rule = "cuda_graph_oom", "capture_crash", "area:cuda_graph_oom"
        finding.cause = f"a GPU kernel crashed while CUDA graphs were being captured: {finding.cause}"
        finding.confidence, finding.alternatives = 0.55, ["other"]
        return
    scores = [(0, False) if area.phase and area.phase != reached and not _raised_in_phase(area, chain) else
              (score + _PHASE_PRIOR, placed) if area.phase else (score, placed)
              for area, (score, placed) in zip(AREAS, scores)]
    if reached == "drafter_loading":
        # The process died while the drafter loaded (its load began, the model's "Model loading took" never came):
        # the drafter's load is where it failed, as a frame in spec_decode/ would say.
        scores = [(score + _PHASE_PRIOR, True) if area.category == "speculative_config_invalid" else (score, placed)
                  for area, (score, placed) in zip(AREAS, scores)]
    # (at equal scores the area the exception was raised in ranks first: where it was raised says more than which
    # words its message uses, "not implemented for Blackwell" raised in the quantization's kernels)
    ranked = sorted(((score, placed, index) for index, (score, placed) in enumerate(scores)), reverse=True)
    (best, best_placed, index), (second, second_placed, runner_up) = ranked[0], ranked[1]
    tie_broken_by_place = best == second and best_placed and not second_placed
    if best < MIN_SCORE or (best - second < MIN_MARGIN and not tie_broken_by_place) \
            or (native and not scores[index][1]):
        return
    if finding.kind in ("kernel_crash", "segfault") and AREAS[index].category == "speculative_config_invalid":
        # A native crash (an illegal memory access) inside the drafter's code is an engine bug of that path, not a
        # refused speculative setting: both readings of the collections file it under other (sgl-project/sglang
        # #5491; vllm-project/vllm#29036).
        return
    area = AREAS[index]
    # The exception itself when there is one (a squashed line's last exception, not its first words).
    quoted = f"{chain[0].qualname}: {chain[0].message}".rstrip(": ")[:160] if chain else ""
    if not quoted:  # (a traceback cut before its exception line names nothing: its decisive line does)
        quoted = finding.decisive.text[:160] if finding.decisive else "?"
    finding.category, finding.kind = area.category, area.kind
    finding.cause = area.cause.format(quoted.rstrip(". "))
    finding.confidence = 0.6 if best >= 6 else 0.5 if best >= 4 else 0.45
    finding.rule = f"area:{area.category}"
    unsure = ["other"] if second < MIN_SCORE else [AREAS[runner_up].category, "other"]
    finding.alternatives = unsure
    if native:
        _quote_placing_frame(finding, lines, chain, area)


def _quote_placing_frame(finding: Finding, lines: list[LogLine], chain: list[RaisedException], area: Area) -> None:
    """A native crash placed by its stack quotes the innermost frame that placed it beside the signal's line (a
    segfault's "ncclLaunchPrepare()  /build/nccl/src/enqueue.cc:574"): that frame is why the area was named."""
    if area.frames is None:
        return
    for frame in (frame for exc in chain for frame in exc.innermost(3)):
        if not frame.function or not area.frames.search(f"{frame.path} {frame.function}"):
            continue
        line = next((line for line in lines if frame.function in line.text and line is not finding.decisive), None)
        if line is not None and line not in finding.support:
            finding.support.append(line)
        return


#: How many of the last lines are read for the error-shaped end.
