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

``error_shaped_end(lines, health)`` is the other half: a tail that never showed the server alive (no ready, no
serving line) and whose last lines are error-shaped (an exception anywhere in a line, a traceback, ``error:``,
``FAILED``, an abort, a non-zero exit) is a crash, never "still starting", even when it is a short fragment with
no exit code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.diagnose.health import Health
from bot.diagnose.native_source import native_sources
from bot.diagnose.optional import OPTIONAL_IMPORT
from bot.diagnose.rules import DEATH_SIGNS, ERROR_SHAPED
from bot.diagnose.structure import Frame, RaisedException, TailStructure
from bot.diagnose.types import GPU_GENERATIONS, Finding, LogLine

_I = re.IGNORECASE


@dataclass(frozen=True)
class Area:
    category: str
    cause: str  # "{0}": the decisive line (cut)
    frames: re.Pattern[str] | None = None  # searched in "path function" of an exception's frames
    classes: re.Pattern[str] | None = None  # the exception's class name
    words: re.Pattern[str] | None = None  # searched in the exception messages and error lines
    kind: str | None = None  # the advice's kind for this category
    #: Only when this start-up phase is the last the tail reached before the crash (bot/diagnose/structure.py
    #: MILESTONES): a place in the capture code alone is a hint, not a verdict (the same files replay the graphs
    #: while serving) ...
    phase: str | None = None
    #: ... unless the exception was raised inside a function that only runs in that phase (the capture itself):
    #: then the frames say the phase even when the tail was cut before its milestone line.
    phase_functions: re.Pattern[str] | None = None
    #: ... or unless the message itself says the phase ("Cannot run aclop operators during NPU graph capture", CUDA's
    #: "operation not permitted when stream is capturing"): words no replay says.
    phase_words: re.Pattern[str] | None = None
    #: A message in these words is a refusal of a feature, not this area's failure, wherever it was raised
    #: ("HiRadixCache only supports MHA, MLA, and NSA (DSA) models" from sglang/srt/mem_cache/).
    refusal: re.Pattern[str] | None = None
    #: An exception of these classes is the area's code checking its own bookkeeping (an assert on the radix tree's
    #: LRU list in sglang/srt/mem_cache/), an engine bug wherever it was raised, not this area's failure.
    bookkeeping: re.Pattern[str] | None = None
    #: An exception whose message lacks these words is not this area's failure, though raised in its code: the
    #: area's code runs the whole model (vLLM's memory profile, determine_available_memory, is a full forward pass,
    #: so a dtype or shape error raised under it is the model's, relayed as "Worker failed with error '...'").
    message_words: re.Pattern[str] | None = None


AREAS: tuple[Area, ...] = (
    Area("jit_compile_failure", "a kernel build (JIT compile) failed: {0}",
         frames=re.compile(r"flashinfer/jit/|torch/_inductor/|torch/_dynamo/|/triton/(?:compiler|runtime|backends)/"
                           r"|torch/utils/cpp_extension|deep_gemm/|tvm_ffi/|/jit_kernel/|/cutlass/|cutlass_dsl|/nvrtc|"
                           r"cute/|tilelang/|sgl_kernel/jit"
                           # flashinfer's module builders, called from its wrappers (flashinfer/jit/core.py
                           # JitSpec.build_and_load; prefill.py "gen_batch_prefill_module(...).build_and_load()")
                           r"|\bbuild_and_load\b|\bgen_\w{1,60}_module\b", _I),
         classes=re.compile(r"^(?:CompilationError|InductorError|BackendCompilerFailed|PTXASError|NVRTCError"
                            r"|CalledProcessError|OutOfResources|CompileError|TritonError)$"),
         words=re.compile(r"\bcompil(?:e|ed|ing|ation|er)\b|\bnvcc\b|\bninja\b|\bptxas\b|\bJIT\b|\bnvrtc\b"
                          r"|\bbuild(?:ing)? (?:the )?(?:extension|kernel|module)|\bgcc\b|\bg\+\+|\bclang\b"
                          r"|\bcollect2\b|\bld(?:\.\w{1,8})?: |\binductor\b|\btriton\b|\bcubin\b|\bPTX\b", _I),
         kind="build"),
    Area("speculative_config_invalid", "the speculative-decoding (MTP/EAGLE/draft) path failed: {0}",
         # the drafters' own model classes too: llama_eagle3.py, deepseek_mtp.py, deepseek_nextn.py, medusa.py,
         # mlp_speculator.py (vllm/model_executor/models/, sglang/srt/models/)
         # (vLLM's maybe_override_with_speculators runs on every start: not the drafter's code)
         frames=re.compile(r"/speculative/|/spec_decode/|eagle|_mtp\b|mtp_|/spec_info|draft|medusa|ngram_|nextn"
                           r"|(?<!override_with_)speculat|/proposer|spec_utils|/spec_", _I),
         # anywhere in an identifier too ('set_eagle3_layers_to_capture', 'num_draft_tokens', 'EagleProposer'):
         # these words name nothing else in an engine's log
         words=re.compile(r"speculat|draft|eagle|mtp|nextn|medusa|proposer|\bspec_|_spec_|_spec\b|SpecV2"
                          r"|\bspec v2\b", _I)),
    Area("nccl_error", "multi-GPU communication (NCCL / torch.distributed) failed: {0}",
         # (DeepEP and NVSHMEM: the all-to-all of expert parallelism and its RDMA transport)
         frames=re.compile(r"pynccl|torch/distributed/|device_communicators/|custom_all_reduce|parallel_state\.py"
                           r"|/distributed/communication_op|nccl|deep_?ep\b|/DeepEP/|nvshmem", _I),
         classes=re.compile(r"^(?:DistBackendError|DistNetworkError|DistStoreError|DistError)$"),
         # (and the other vendors' collective libraries: Intel's oneCCL, AMD's RCCL, Huawei's HCCL, Microsoft's MSCCL)
         words=re.compile(r"nccl|\bone ?ccl\b|\brccl\b|\bhccl\b|\bmsccl\w{0,4}\b|ProcessGroup\w{0,20}"
                          r"|\ball[_ -]?reduce\b|\ball[_ -]?gather\b|\bcollective\b|\bc10d\b|\bgloo\b|\brendezvous\b"
                          r"|\bTCPStore\b|\bcuda ?ipc\b|\bP2P\b|\bpeer access\b|\bpeer mapping resources\b", _I),
         kind="nccl"),
    Area("missing_dependency", "a package the engine needs is missing or does not import: {0}",
         # importlib.metadata's PackageNotFoundError ("No package metadata was found for X"): the engine or a library
         # asks for an installed distribution's version (vllm/utils, transformers' require_version) and it is absent.
         classes=re.compile(r"^(?:ModuleNotFoundError|ImportError|PackageNotFoundError)$"),
         # ... and a package whose installed version lacks what the engine calls: "module 'triton' has no attribute
         # 'X'", torch's dispatcher "operator torchvision::nms does not exist" (torchvision built for another torch).
         words=re.compile(r"No module named|cannot import name|No package metadata was found for|\bis not installed\b"
                          r"|\bplease install\b|\bpip install\b|undefined symbol|cannot open shared object"
                          r"|requires? the [\w.-]{1,40} (?:package|library)"
                          r"|\bnot found in your environment\b|\bmodule '(?!transformers)[a-z_][\w.]{0,60}' has no "
                          r"attribute\b|\boperator \w{1,40}::\w{1,80} does not exist", _I),
         kind="module"),
    # The taxonomy's "OOM or failure during CUDA graph capture": the capture code, or a crash while capture runs
    # (the capture milestone is the last phase reached, see place()).
    Area("cuda_graph_oom", "CUDA graph capture failed: {0}",
         frames=re.compile(r"cuda_graph_runner|cudagraph|capture_model|capture_one_batch|graph_capture|CUDAGraph"
                           r"|piecewise_backend|cuda_graph|torch/cuda/graphs\.py|\bcapture_(?:begin|end)\b", _I),
         words=re.compile(r"cuda ?graph|cudagraph|graph capture|\bcapturing\b", _I), kind="capture",
         phase="graphs_capturing",
         # vllm v1/worker/gpu_model_runner.py capture_model / _capture_cudagraphs, sglang cuda_graph_runner.py
         # capture / capture_one_batch_size; never replay()
         phase_functions=re.compile(r"^(?:capture_model|_?capture_cudagraphs?|capture|capture_one_batch\w{0,12}"
                                    r"|_?capture_graphs?|graph_capture|capture_(?:begin|end))$"),
         # (cudaErrorStreamCaptureUnsupported / ...Invalidated read "operation not permitted when stream is
         # capturing", "operation failed due to a previous error during capture"; torch_npu's ACL graph
         # "Cannot run aclop operators during NPU graph capture", vllm-project/vllm-ascend#3927)
         phase_words=re.compile(r"\b(?:during|while|in) (?:\w{1,12} ){0,2}graph captur|\bstream is capturing\b"
                                r"|\berror during capture\b|\bcudaErrorStreamCapture\w{1,30}", _I)),
    # The KV cache's sizing and allocation after the weights (vllm v1/core/kv_cache_utils.py
    # check_enough_kv_cache_memory, the worker's determine_available_memory; sglang mem_cache/, init_memory_pool):
    # a tail cut inside them is the KV cache not fitting (vllm-project/vllm#20726).
    Area("kv_cache_insufficient", "the KV cache did not fit in what the weights left: {0}",
         frames=re.compile(r"check_enough_kv_cache_memory|kv_cache_utils\.py|determine_available_memory"
                           r"|get_kv_cache_configs?\b|init_memory_pool|sglang/srt/mem_cache/", _I),
         kind="raise",
         message_words=re.compile(r"memory|\bOOM\b|\bKV\b|cache|\bblocks?\b|\btokens?\b|\bmax_model_len\b", _I),
         refusal=re.compile(r"\bonly supports?\b|\bnot (?:yet )?supported\b|\bunsupported\b|\bdoes not support\b", _I),
         bookkeeping=re.compile(r"^(?:AssertionError|IndexError|KeyError)$")),
    # A GPU generation or capability named in the error: the hardware is what the code refuses.
    Area("cuda_arch_or_driver", "the GPU or its driver is not what this code needs: {0}",
         words=re.compile(r"\bsm_?\d{2,3}a?\b|compute capability|\bCUDA capability\b|\b" + GPU_GENERATIONS
                          + r"\b|\bdriver version\b|\bno kernel image\b", _I), kind="capability"),
    # (vLLM's scaled-mm kernel choice for quantized linear layers, vllm/model_executor/kernels/linear/
    # choose_scaled_mm_linear_kernel, is the quantization's too)
    Area("quantization_unsupported", "the quantization kernels failed for this model or GPU: {0}",
         frames=re.compile(r"/layers/quantization/|/kernels/linear/|choose_\w{0,30}mm_linear_kernel", _I),
         # the quantization's own vocabulary, as an expert reads it in a new message: the formats and their kernels
         # (vllm/model_executor/layers/quantization/: awq, gptq, marlin, bitblas, machete, compressed_tensors,
         # modelopt, mxfp4; sglang/srt/layers/quantization/ the same) and the parameters only a quantized
         # checkpoint has (weight_scale, input_scale, weight_scale_inv, qweight, qzeros, g_idx)
         words=re.compile(r"\bquantiz|\b(?:awq|gptq|marlin|bitblas|machete|exllama\w{0,4}|bitsandbytes|bnb"
                          r"|compressed[-_]tensors|modelopt|fbgemm|torchao|hqq|aqlm|nvfp4|mxfp4|w4a(?:8|16)"
                          r"|w8a(?:8|16)|scaled_mm)(?:_\w{1,30})?\b"
                          r"|\w{0,40}(?:weight_scale(?:_inv|_2)?|input_scale|qweight|qzeros|g_idx)\b", _I)),
    # The engine looking the architecture up in its registry (vllm model_executor/models/registry.py
    # inspect_model_cls / resolve_model_cls / _raise_for_unsupported, sglang models/registry.py and its older
    # managers/router/model_runner.py get_model_cls_by_arch_name): a tail cut there is most often the architecture
    # this release lacks.
    Area("unsupported_architecture", "the engine could not find this model's architecture among its own: {0}",
         frames=re.compile(r"models/registry\.py|\bget_model_cls_by_arch_name\b|\b_?(?:inspect|resolve)_model_cls\b"
                           r"|\b_raise_for_unsupported\b|\bget_model_architecture\b", _I),
         words=re.compile(r"\barchitectures? [^\n]{0,80}\bnot supported\b|\bnot supported for now\b", _I),
         kind="architecture"),
    # The engine's argument checks (sglang/srt/server_args.py, vllm/engine/arg_utils.py, vllm/config/), or an error
    # that names one of its flags; a --speculative-* flag (vLLM's --speculative-config, SGLang's
    # --speculative-algorithm / --speculative-num-steps / ...) names the drafter's setup, whose area is above.
    Area("bad_argument", "the engine refused a launch setting: {0}",
         # (and any launcher's own argument parsing: ms-swift's _parse_args raising "remaining_argv: [...]")
         # (vllm/config/ also holds run-time helpers, get_layers_from_vllm_config looking a layer up by name: only its
         # checks are the arguments', as in bot/diagnose/structure_rules.py arguments_frames)
         frames=re.compile(r"sglang/srt/server_args\.py|vllm/engine/arg_utils\.py"
                           r"|vllm/config(?:/\w{1,40})?\.py (?:__post_init__|_?verify\w{0,40}|_?validate\w{0,40}"
                           r"|_?check\w{0,40}|__init__|create_\w{0,30}config|_?set_\w{0,40}|try_verify\w{0,30})\b"
                           r"|\b_?parse_(?:known_)?args\b", _I),
         words=re.compile(r"(?<![\w-])--(?!speculative-)[a-z][a-z0-9]{1,30}(?:-[a-z0-9]{1,30}){1,6}\b")),
    # huggingface_hub's download path (file_download.py hf_hub_download, utils/_http.py and its backoff's "Retrying in
    # 1s [Retry 1/5]."): a start that failed while fetching from the Hub. (Not transformers' cached_file alone: it
    # fails the same way on a local folder that lacks the file.)
    Area("hub_access", "the engine failed while fetching from the Hugging Face Hub: {0}",
         frames=re.compile(r"huggingface_hub/(?:file_download|_snapshot_download|hf_api|utils/_http)", _I),
         classes=re.compile(r"^(?:HTTPError|HfHubHTTPError|LocalEntryNotFoundError|RepositoryNotFoundError"
                            r"|GatedRepoError|OfflineModeIsEnabled|MaxRetryError|ConnectTimeout|ReadTimeout)$"),
         words=re.compile(r"\bRetrying in \d{1,4}s \[Retry \d{1,3}/\d{1,3}\]|huggingface\.co\b|\bHF_HUB_OFFLINE\b",
                          _I),
         kind="network"),
    Area("port_in_use", "a port the engine binds is taken: {0}",
         words=re.compile(r"address already in use|\bEADDRINUSE\b|errno:? ?98\b|\[Errno 98\]"
                          r"|\bbind\b[^\n]{0,80}\b(?:fail|error|in use|taken)|failed to (?:bind|listen)\b"
                          r"|\bport\b[^\n]{0,40}\b(?:in use|taken|occupied|not available|unavailable|busy)\b", _I)),
)

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


#: How many of the last lines are read for the error-shaped end.
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
