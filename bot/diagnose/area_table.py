"""The areas an unknown crash is placed in (bot/diagnose/areas.py scores them): for each category, where its
failures are raised (frame paths, from the engines' and their libraries' own source layout: github.com/sgl-project/
sglang python/sglang/srt, github.com/vllm-project/vllm vllm/, flashinfer, triton, torch), which exception classes
and which words of the error lines say it. Data only, so a new area or word is one entry here."""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.diagnose.types import GPU_GENERATIONS

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
         # (CUTLASS's CuTe DSL compiles its kernels at first use and raises its own classes: cutlass.base_dsl
         # .common.DSLUserCodeError, DSLRuntimeError, DSLAstPreprocessorError; sgl-project/sglang#34433, FA4)
         classes=re.compile(r"^(?:CompilationError|InductorError|BackendCompilerFailed|PTXASError|NVRTCError"
                            r"|CalledProcessError|OutOfResources|CompileError|TritonError|DSL\w{0,30}Error)$"),
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
