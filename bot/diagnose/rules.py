"""The diagnoser's knowledge, as data: which engine messages mean which cause.

Every pattern is written from the engines' own error messages (SGLang, vLLM, PyTorch, NCCL, huggingface_hub,
Triton/ninja, argparse, the kernel), not from any one log file: see shared/engines/*-log-lines.md and the issue
threads those messages come from. To teach the diagnoser a new cause, add a ``Rule``; to teach it a new wording of a
known cause, widen a pattern. Patterns run against the message with its prefixes removed
(``bot.logevents.normalize_line``).

How a rule is chosen (bot/diagnose/match.py): the highest ``priority`` wins; among equals, the earliest line (the root
cause comes before its consequences). Lines an engine logged at INFO/WARNING only count for rules marked
``any_level``. Lines matching ``FRAMING`` are consequences (a child died, the engine core failed to start) and never
a cause. A CUDA out-of-memory error (category ``OOM``) is given its category by the phase it happened in (weights,
KV cache, CUDA graph capture, serving), read from the traceback frames and log lines around it.
"""

from __future__ import annotations

import re
from dataclasses import fields
from functools import lru_cache

from bot.diagnose.argument_rules import ARGUMENT_RULES
from bot.diagnose.build_rules import JIT_TOOL_RULES
from bot.diagnose.comm_rules import COMM_RULES, GLOO_TRANSPORT
from bot.diagnose.gpu_rules import GPU_RULES
from bot.diagnose.types import Rule, r
from bot.diagnose.optional import OPTIONAL_IMPORT
from bot.diagnose.signals import SIGNAL_RULES
from bot.diagnose.library_rules import LIBRARY_RULES
from bot.diagnose.feature_rules import FEATURE_RULES
from bot.diagnose.slurm_rules import SLURM_RULES
from bot.diagnose.vocabulary_rules import VOCABULARY_RULES
from bot.diagnose.weights_rules import WEIGHTS_RULES
from planners.engines import registry

#: Category placeholder: a CUDA OOM whose category depends on the phase it struck in.
OOM = "@oom"

#: How far (lines) the phase of an OOM is looked for: above it (its traceback and the log before), and below it
#: (Ray and multi-process logs interleave, so the phase line can follow the error).
PHASE_LOOKBACK = 80
PHASE_LOOKAHEAD = 8
#: How far above a line a rule's ``context`` must be found.
CONTEXT_LINES = 12
#: "<function> not in lib<x>.so": a library loaded without a symbol the caller resolves by name.
MISSING_SYMBOL = r(r"\b(\w{3,80})(?: or \w{3,80})? not in (lib[\w.+-]{1,60}\.so)\b")


_r = r


RULES: tuple[Rule, ...] = ARGUMENT_RULES + (
    # ------------------------------------------------------------------ model support
    Rule("architecture_not_supported", "unsupported_architecture",
         # (tpu-inference's registry says "not registered in": "UnsupportedArchitectureError: Model architectures
         # ['GraniteMoeHybridForCausalLM'] not registered in tpu-inference.", vllm-project/tpu-inference#2645)
         _r(r"Model architectures? \[?['\"]?([\w.]+)['\"]?.{0,60}? (?:(?:are|is) not supported|(?:are |is )?not "
            r"registered in\b)"
            r"|\bUnsupported arch(?:itecture)?s? \[?['\"]?([\w.]+)"
            # a model class named as not supported ("Qwen3NextForCausalLM is not supported by sglang yet")
            r"|\b([A-Z]\w{2,60}(?:ForCausalLM|ForConditionalGeneration|LMHeadModel))\b[^\n]{0,20} is not (?:yet )?"
            r"supported\b(?! (?:with|for|when|in combination))"),
         80, 0.9, "this engine version does not support the architecture {0}{1}{2}"),
    Rule("transformers_unknown_model_type", "transformers_too_old",
         _r(r"model type [`'\"]?([\w.-]+)[`'\"]? but Transformers does not recognize this architecture"),
         80, 0.9, "the installed transformers does not know model type '{0}'", unsure=("unsupported_architecture",)),
    Rule("transformers_config_keyerror", "transformers_too_old", _r(r"^KeyError: '([\w.-]+)'$"), 70, 0.75,
         "the installed transformers has no config class for model type '{0}'",
         context=_r(r"configuration_auto|CONFIG_MAPPING|AutoConfig")),
    Rule("transformers_upgrade_asked", "transformers_too_old",
         _r(r"(?:please )?upgrade (?:your )?transformers|requires? transformers ?(?:>=|version)"), 60, 0.7,
         "the installed transformers is too old for this model"),
    # (the same clash for a config class: "'aimv2' is already used by a Transformers config, pick another name.",
    # transformers' AutoConfig.register, when it ships a class an older engine registers itself; NVIDIA/cosmos-rl#180)
    Rule("transformers_too_new", "other", _r(r"is already used by a Transformers (?:model|config)"), 75, 0.75,
         "the installed transformers is newer than this engine version supports (a config class is registered twice)",
         kind="transformers_too_new"),
    # ------------------------------------------------------------------ speculative decoding
    Rule("speculative_invalid", "speculative_config_invalid",
         _r(r"speculat[^\n]{0,200}\b(?:not supported|not compatible|not implemented|not yet supported|invalid"
            r"|does not support"
            r"|must be|cannot be|only supported|only supports?|is required|requires?|(?:was|is) provided without)\b"
            r"|\b(?:expected both|invalid|unsupported|not supported|not compatible|does not (?:yet )?support"
            r"|only supports?|must be|must not be|cannot be|requires?)\b[^\n]{0,80}\bspeculat"
            r"|only [\w ,]{1,120} speculative algorithms? (?:is|are) supported"),
         78, 0.85, "the speculative-decoding (MTP/EAGLE) settings are not valid for this model or engine version"),
    Rule("draft_invalid", "speculative_config_invalid",
         _r(r"\b(?:eagle3?|mtp|nextn|draft[ _]model|num_speculative_tokens|n_predict)\b[^\n]{0,200}"
            r"\b(?:not supported|not compatible|only supported|only supports?|not implemented|invalid|must be"
            r"|does not support)\b"
            # ... and the other way round ("... is not compatible with EAGLE as EAGLE requires ...")
            r"|\b(?:not (?:yet )?(?:supported|compatible)|does not (?:yet )?support|only supports?)\b[^\n]{0,60}"
            r"\b(?:eagle3?|mtp|nextn|draft[ _]models?)\b"),
         78, 0.85, "the speculative-decoding (MTP/EAGLE) settings are not valid for this model or engine version"),
    Rule("draft_weights_missing", "speculative_config_invalid",
         # (EAGLE-3 heads name their one decoder layer "midlayer": sglang models/llama_eagle3.py)
         _r(r"KeyError: '([^']*(?:mtp|nextn|eagle|draft|spec_|midlayer)[^']*)'"), 72, 0.75,
         "the MTP/draft weights could not be loaded ({0} not found): the checkpoint or this engine version does not "
         "provide the drafter"),
    # ------------------------------------------------------------------ model files and the hub
    Rule("safetensors_header", "model_files_missing_or_corrupt",
         _r(r"Error while deserializing header: ?(\w+)|SafetensorError|MetadataIncompleteBuffer|HeaderTooLarge"
            r"|incomplete metadata, file not fully covered"),
         80, 0.9, "a safetensors shard is corrupt or incomplete ({0})", kind="corrupt"),
    Rule("repo_id_invalid", "model_files_missing_or_corrupt",
         _r(r"Repo id must (?:be in the f\w+|use alphanumeric)|HFValidationError|Invalid repository ID or local "
            r"directory"),
         80, 0.85, "the model path is not a folder with a config.json, so it was taken for a Hub repo id",
         kind="path"),
    # A .gguf file read as the model's JSON config: this engine build has no GGUF loader for the path it was given
    # (vLLM's 0.5.4 release had none, its nightly did: vllm-project/vllm#1002).
    Rule("gguf_read_as_config", "quantization_unsupported",
         _r(r"It looks like the config file at '[^'\n]{0,400}\.gguf' is not a valid JSON"), 77, 0.6,
         "the engine read the .gguf file as a JSON config: this build does not load GGUF files (a release with GGUF "
         "support, or the original safetensors checkpoint)", kind="gguf", unsure=("model_files_missing_or_corrupt",)),
    Rule("file_missing", "model_files_missing_or_corrupt",
         _r(r"does not appear to have (?:a )?files? named ([\w./-]+)|No such file or directory: '([^']*(?:config\.json"
            r"|\.safetensors|\.bin|\.gguf|tokenizer[^']*))'|Cannot find any model weights|No model weights found"
            r"|can(?:no|')t find (?:the )?config(?:\.json| file)"
            r"|It looks like the config file at [^\n]{0,400} is not a valid JSON"
            # (vLLM's reader of a Mistral-format checkpoint, transformers_utils/config.py load_params_config: "Failed
            # to load mistral 'params.json' config for model X. Please check if the model is a mistral-format model
            # and if the config file exists.")
            r"|Failed to load \w{1,40} '([\w.-]{1,60})' config for model\b"),
         75, 0.85, "a model file is missing: {0}{1}{2}", kind="path"),
    Rule("checkpoint_unreadable", "model_files_missing_or_corrupt",
         _r(r"PytorchStreamReader failed reading zip archive|invalid load key|unexpected EOF while reading"),
         70, 0.8, "a checkpoint file is truncated or corrupt", kind="corrupt"),
    # ... unless the missing weights are the drafter's: the MTP layer (vllm models/deepseek_mtp.py names its head
    # "shared_head"; "mtp"/"nextn" elsewhere) that the checkpoint does not ship (vllm-project/vllm#25993)
    Rule("draft_weights_not_initialized", "speculative_config_invalid",
         _r(r"Following weights were not initialized from checkpoint[^\n]{0,2000}?(?:shared_head|\bmtp|nextn|eagle"
            r"|draft)"), 62, 0.75,
         "the checkpoint lacks the MTP / draft weights the speculative setting needs", kind="draft_weights"),
    Rule("weights_not_initialized", "model_files_missing_or_corrupt",
         _r(r"Following weights were not initialized from checkpoint"), 60, 0.7,
         "the checkpoint lacks weights the model needs", kind="corrupt"),
    Rule("gated_repo", "hub_access",
         _r(r"Cannot access gated repo|GatedRepoError|Access to model \S+ is restricted|trying to access a gated repo"
            r"|\bRepo model \S{1,120} is gated\b"),
         80, 0.9, "the engine tried to download a gated model from the Hub without access", kind="gated"),
    Rule("hub_unreachable", "hub_access",
         _r(r"(?:RepositoryNotFoundError|Repository Not Found for url|RevisionNotFoundError|LocalEntryNotFoundError"
            r"|OfflineModeIsEnabled|We couldn't connect to 'https://huggingface\.co')"
            r"|Failed to resolve '(?:huggingface\.co|hf-mirror\.com|cdn-lfs[\w.-]*)'"
            r"|(?:huggingface\.co|hf-mirror\.com|modelscope\.cn)[^\n]{0,300}(?:Max retries exceeded|timed out"
            r"|NameResolutionError|name resolution"
            r"|Connection refused|401 Client Error|403 Client Error|429 Client Error)"
            r"|(?:401|403|429) Client Error[^\n]{0,200}(?:huggingface\.co|hf-mirror\.com)"
            # huggingface_hub's own HTTP error class, and the Hub's 5xx (an outage, a gateway timeout)
            r"|\bHfHubHTTPError\b|\b5\d\d Server Error[^\n]{0,200}(?:huggingface\.co|hf-mirror\.com|modelscope)"),
         75, 0.85, "the engine tried to reach the model hub (huggingface.co) and could not", kind="network"),
    # ------------------------------------------------------------------ software install
    # pip's resolver after an install that left the environment inconsistent: "vllm 0.9.1 requires torch==2.7.0, but
    # you have torch 2.8.0 which is incompatible." (pip/_internal/operations/check.py, the dependency-conflict report).
    Rule("pip_version_conflict", "missing_dependency",
         _r(r"\b([\w.-]{1,80}) [\w.+-]{1,40} requires ([\w.-]{1,80})[^\n]{0,60}, but you have ([\w.-]{1,80}) "
            r"([\w.+-]{1,40}) which is incompatible"), 66, 0.75,
         "the installed {2} {3} does not match what {0} requires ({1}): a package version clash", kind="version_clash",
         any_level=True),
    # A model module the engine's own package lacks (vllm/model_executor/models/, sglang/srt/models/): the installed
    # engine release predates that model; nothing to pip install.
    Rule("engine_model_module_missing", "unsupported_architecture",
         _r(r"No module named '((?:vllm\.model_executor|sglang\.srt)\.models\.\w{1,80})'"), 74, 0.8,
         "the installed engine has no model module {0}: this release predates the model", kind="engine_release",
         exclude=OPTIONAL_IMPORT),
    Rule("module_missing", "missing_dependency", _r(r"No module named '([\w.]+)'"), 72, 0.9,
         "the Python module '{0}' is not installed in the engine's environment", kind="module",
         exclude=OPTIONAL_IMPORT),
    # cu* is the CUDA driver API (libcuda.so, installed with the driver): a binary that needs a symbol the driver
    # lacks was built for a newer driver ("undefined symbol: cuGreenCtxStreamCreate", green contexts arrived in
    # CUDA 12.4's driver; sgl-project/sglang#8131).
    Rule("driver_symbol_missing", "cuda_arch_or_driver",
         _r(r"undefined symbol: (cu[A-Z][A-Za-z0-9_]{2,60})\b"), 74, 0.75,
         "a compiled kernel needs the CUDA driver function {0}, which the installed driver lacks: the driver is "
         "older than the build", kind="driver", unsure=("missing_dependency",)),
    # A runtime library that lacks a function the package calls ("aclnnLightningIndexer or
    # aclnnLightningIndexerGetWorkspaceSize not in libopapi.so, or libopapi.sonot found", torch_npu's op-API loader;
    # sgl-project/sglang#14747): the toolkit installed (CANN, CUDA, ROCm) is older than the package.
    Rule("library_lacks_symbol", "missing_dependency", MISSING_SYMBOL, 73, 0.75,
         "the installed {1} has no {0}: the toolkit library is older (or other) than the package calling it needs",
         kind="missing_symbol", unsure=("cuda_arch_or_driver",)),
    Rule("shared_library", "missing_dependency",
         _r(r"(?<![\w.+-])(lib[\w.+-]{0,200}\.so[\w.]*+): cannot open shared object file|undefined symbol: (\S+)"), 72, 0.85,
         "a compiled library cannot be loaded ({0}{1}): a binary built against other versions", kind="binary",
         exclude=OPTIONAL_IMPORT, unsure=("cuda_arch_or_driver",)),
    # (an ImportError that says a method is not supported, or asks for a newer transformers, is that check's)
    Rule("import_error", "missing_dependency", _r(r"^ImportError: (.+)"), 65, 0.75,
         "an import failed: {0}", kind="import",
         exclude=_r(r"\bis not (?:yet )?supported\b|upgrade (?:your )?transformers")),
    Rule("please_install", "missing_dependency",
         _r(r"\b(?:please install|pip install) ([\w.\[\]-]+)|(?<![\w.-])([\w.-]++) is not installed\b"), 50, 0.65,
         "a required package is not installed ({0}{1})", kind="module", exclude=OPTIONAL_IMPORT),
) + GPU_RULES + JIT_TOOL_RULES + (
    # ------------------------------------------------------------------ memory
    Rule("cuda_graph_capture_failed", "cuda_graph_oom",
         _r(r"Capture (?:piecewise )?cuda ?graph failed|operation not permitted when stream is capturing"
            # SGLang's piecewise graphs (model_executor/piecewise_cuda_graph_runner.py: "Piecewise CUDA Graph failed
            # with error: ...")
            r"|\bPiecewise CUDA ?Graph failed\b"
            # Ascend's graph capture (ACL graphs, torch_npu NPUGraph): the runtime's capture calls and its stream
            # resources ("rtStreamBeginCapture execution failed", "Insufficient_Stream_Resources(EL0009)")
            r"|\brtStream(?:Begin|End)Capture\w{0,20} execution failed|\bInsufficient_Stream_Resources\b|\bEL0009\b"
            # ... and the runtime's capture streams themselves ("New capture stream failed", "Create capture stream
            # failed", "Capture wait event failed" [FILE:capture_model_utils.cc / api_impl.cc], vllm-project/vllm-ascend
            # #9564: the driver could not allocate another capture stream)
            r"|\b(?:New|Create) capture stream failed\b|\bCapture wait event failed\b"
            # (torch_npu's NPUGraph capture_begin over CANN's model-RI capture: "capture_begin:../torch_npu/csrc/core/
            # npu/NPUGraph.cpp:230 NPU function error: c10_npu::acl::AclmdlRICaptureBegin(...)", vllm-ascend#11990)
            r"|\bAclmdlRICapture(?:Begin|End)\b"
            r"|cudaErrorStreamCapture\w{1,40}"
            # the CUDA runtime's texts of the capture errors (cudaGetErrorString: 901 "operation failed due to a
            # previous error during capture", microsoft/vllm-windows#5; 906/907 name "a capturing (blocking) stream")
            r"|\bprevious error during capture\b|\bcapturing (?:blocking )?stream\b"),
         80, 0.85, "CUDA graph capture failed", kind="capture",
         # SGLang's capture wraps whatever the capture raised ("Capture cuda graph failed: {e}"): a transport
         # error of the ranks in it is the communication's failure, not the graphs' (sgl-project/sglang#4205).
         exclude=re.compile(GLOO_TRANSPORT.pattern + "|" + MISSING_SYMBOL.pattern, re.IGNORECASE)),
    Rule("cuda_oom", OOM,
         _r(r"CUDA out of memory|OutOfMemoryError|CUDA (?:driver )?error: out of memory|cudaErrorMemoryAllocation"
            r"|(?:HIP|NPU|XPU|MUSA) out of memory|\bCUDA_ERROR_OUT_OF_MEMORY\b"
            # the NVIDIA kernel driver's own allocation failure (NVRM in the kernel log; unified-memory GB10 / WSL)
            r"|\bNV_ERR_NO_MEMORY\b"
            # the CUDA runtime's text for cudaErrorMemoryAllocation in the macros that quote it: vLLM's custom
            # all-reduce "Failed: Cuda error <file>:<line> 'out of memory'" (csrc/custom_all_reduce.cuh CUDACHECK)
            r"|\bCuda error\b[^\n]{0,300}'out of memory'"
            # Ascend's allocator (CANN "EL0004: Failed to allocate memory", torch_npu "Failed to apply for memory")
            r"|\bEL0004\b|\bFailed to apply for memory\b"
            # vLLM's linear layers wrap the allocation's OOM (layers/linear.py create_weights: "Failed to create
            # unquantized linear weights. This may be caused by insufficient memory to allocate the weight.")
            r"|\b(?:insufficient|not enough) (?:GPU |device )?memory to allocate (?:the )?"
            r"(?:weights?|parameters?|tensors?)\b"),
         70, 0.8, "CUDA out of memory",
         exclude=_r(r"ray\.exceptions\.OutOfMemoryError|Task was killed due to the node running low on memory")),
) + COMM_RULES + (
    # ------------------------------------------------------------------ native crashes outside the taxonomy
    Rule("illegal_memory_access", "other",
         _r(r"an illegal memory access was encountered|CUDA error: misaligned address|device-side assert triggered"
            r"|CUDA error: unspecified launch failure|CUDA error: an illegal instruction"
            # ROCm's HSA runtime on a GPU kernel's fault ("Memory access fault by GPU node-2 ... Reason: Page not
            # present", "aborting with error : HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION", ROCR-Runtime)
            r"|\bMemory access fault by GPU node\b|\bHSA_STATUS_ERROR_(?:MEMORY_APERTURE_VIOLATION|EXCEPTION"
            r"|ILLEGAL_INSTRUCTION|MEMORY_FAULT)\b"
            r"|\bCuda (?:error|failure)\b[^\n]{0,300}'(?:misaligned address|unspecified launch failure"
            r"|an illegal instruction was encountered|device-side assert triggered)'"
            # the failed assert as the kernel itself prints it, before any CUDA error reaches Python: CUDA's device
            # assert ("IndexKernel.cu:92: operator(): block: [0,0,0], thread: [0,0,0] Assertion `...` failed.") and
            # HIP's ("skinny_gemms.hip:497: void wvSplitK_hf_sml_(...): Device-side assertion `false' failed.",
            # ROCm/vllm#527)
            r"|\.(?:cu|cuh|hip)h?:\d{1,6}: [^\n]{1,400}(?:block: \[\d{1,6},\d{1,6},\d{1,6}\], thread: \[\d{1,6},\d{1,6},"
            r"\d{1,6}\] Assertion `|Device-side assertion `)"),
         45, 0.6, "a CUDA kernel crashed (illegal memory access / device-side assert): an engine or kernel bug",
         kind="kernel_crash"),
    # SGLang's scheduler watchdog: no forward step finished within --watchdog-timeout, so it kills the server
    # (sglang/srt/managers/scheduler.py watchdog_thread: "Watchdog timeout (self.watchdog_timeout=300)").
    Rule("scheduler_watchdog", "other",
         _r(r"\bWatchdog timeout \(self\.watchdog_timeout=(\d{1,6})|\bScheduler watchdog timeout\b"), 46, 0.6,
         "the scheduler was stuck for {0} s and SGLang's watchdog stopped the server (a hang, not a crash of its own)",
         kind="hang", any_level=True),
    # ... whose stack dump (py-spy's "function (path:line)", faulthandler's 'File "path", line N in function')
    # shows the scheduler inside a JIT kernel build: the build hung (a lock left in the cache by a killed build, a
    # compiler waiting), not the GPU (sgl-project/sglang#36408: "build_ninja (tvm_ffi/cpp/extension.py:533)" under
    # the watchdog's line).
    Rule("hang_in_kernel_build", "jit_compile_failure",
         _r(r"^\s{0,12}(?:\w{1,80} \(|File \")(?:[^\s\"()]{1,200}/)?(?:tvm_ffi/cpp|jit_kernel|flashinfer/jit"
            r"|deep_gemm/jit|torch/utils/cpp_extension|triton/compiler|torch/_inductor)(?:/[^\s\"()]{0,120})?"
            r"\.py(?::\d{1,6}\)|\", line \d{1,6} in \w{1,80})"), 50, 0.6,
         "the scheduler hung inside a JIT kernel build until the watchdog stopped the server", kind="build_hang",
         any_level=True, context=_r(r"\bWatchdog timeout\b")),
    # vLLM's message queue between the engine and its workers: a rank has not taken the last broadcast for a minute
    # (vllm/distributed/device_communicators/shm_broadcast.py: "No available shared memory broadcast block found in
    # 60 seconds. This typically happens when some processes are hanging or doing some time-consuming work (e.g.
    # compilation, weight/kv cache quantization)."). Logged at INFO, and routine during a long start-up step: only
    # after the server was up is it a stalled engine (bot/diagnose/match.py; vllm-project/vllm#48752).
    Rule("shm_broadcast_stall", "other",
         _r(r"\bNo available shared memory broadcast block found in (\d{1,6}) seconds?\b"), 28, 0.5,
         "a worker of the engine has not answered for {0} s (vLLM's shared-memory broadcast): the engine is hung",
         kind="stall", any_level=True),
    # SGLang's /health when the scheduler stopped answering (srt/entrypoints/http_server.py health_generate: "Health
    # check failed. Server couldn't get a response from detokenizer for last N seconds."), logged without a level
    # while the HTTP server still runs: a hung scheduler, only after the server was up (sgl-project/sglang#10856).
    Rule("health_check_stall", "other",
         _r(r"\bHealth check failed\. Server couldn't get a response from detokenizer for last (\d{1,6}) seconds"), 28,
         0.5, "the server's health check failed: its scheduler has not answered for {0} s (hung, not crashed)",
         kind="stall", any_level=True),
    Rule("segfault", "other", _r(r"Segmentation fault|\bSIGSEGV\b|Fatal Python error"), 35, 0.55,
         "the engine crashed in native code (segmentation fault)", kind="segfault"),
    # ------------------------------------------------------------------ killed from outside
    Rule("oom_killer", "host_oom_killed",
         _r(r"\boom[- _]?kill(?:er|ed)?\b|Out of memory: Kill(?:ed)? process|Memory cgroup out of memory"
            r"|killed by the (?:linux )?oom"),
         40, 0.7, "the kernel's OOM killer stopped the engine: host RAM ran out", any_level=True),
    Rule("ray_worker_died", "host_oom_killed",
         _r(r"A worker died or was killed while executing a task|Worker unexpectedly exits with a connection error"),
         30, 0.6, "a worker process was killed (most often the host OOM killer while loading weights into RAM)",
         any_level=True),
    Rule("sigkill_exit", "host_oom_killed",
         _r(r"exit ?code[=:]? ?-?9\b|exitcode=-?9\b|exit(?:ed)? with (?:code|status) 137\b|Signals\.SIGKILL"
            r"|\bsignal 9\b|killed by SIGKILL|killed by signal: Killed|terminated with signal SIGKILL"),
         30, 0.6, "a process of the engine was killed with SIGKILL (most often the host OOM killer)", any_level=True),
) + SIGNAL_RULES + SLURM_RULES + LIBRARY_RULES + FEATURE_RULES + VOCABULARY_RULES + WEIGHTS_RULES


@lru_cache(maxsize=8)
def rules_for(engine: str | None) -> tuple[Rule, ...]:
    """The engine-neutral rules plus the crash rules of the deployment's engine (planners/engines/<name>/
    crash_rules.py, through the registry); every registered engine's when the engine is not known."""
    known = registry.find(engine)
    chosen = (known,) if known is not None else registry.engines()
    own = tuple(Rule(**{f.name: getattr(rule, f.name) for f in fields(Rule)})
                for each in chosen for rule in each.crash_rules)
    return RULES + own

#: Consequences that name no cause: the real error is elsewhere (above, or in another process).
FRAMING = re.compile(
    r"Engine core initialization failed|EngineCore failed to start|WorkerProc (?:failed to start|initialization "
    r"failed)|Scheduler hit an exception|Received sigquit from a child|SIGQUIT received|It usually means (?:the|one) "
    r"child|Child process unexpectedly failed|EngineDeadError|Worker failed with error|Engine process failed to start"
    r"|Application startup failed|Initialization failed\. warmup error|Dumping requests before crash"
    r"|Exception in (?:worker|thread|ModelRpcClient)|Error executing method|router init state: Traceback"
    r"|Process \S+ died|See (?:the )?(?:root cause|stack trace) above"
    # SGLang's engine when a scheduler's pipe closes before it was ready (sglang/srt/entrypoints/engine.py
    # _wait_for_scheduler_ready, logged without a level in SGLang's format, followed by "Exit code: N")
    r"|scheduler is dead\. Please check if there are relevant logs",
    re.IGNORECASE,
)

#: SGLang kills its own process tree after a child failed; the shell's "Killed" that follows is this, not the OOM
#: killer (sglang-log-lines.md section 6).
SELF_KILL = re.compile(
    r"Received sigquit from a child|SIGQUIT received|It usually means (?:the|one) child failed|kill_process_tree"
    r"|Initialization failed\. warmup error",
    re.IGNORECASE,
)

#: An exception line, for unrecognised crashes (quoted, never dressed up as a known cause).
GENERIC_ERROR = re.compile(
    r"^(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Failure|Exit)\b(?::|$)|^(?:[\w.]+\.)?Exception(?::|$)"
    r"|^Value error, |^AssertionError\b"
    r"|^(?:CRITICAL|FATAL)\b|^Error: |^ERROR: (?!\s*$)"
)

#: A line that looks like an error wherever it sits: an exception class anywhere (a traceback squashed onto one line),
#: a traceback header, "error:" / "Error:" / "ERROR" as a word with a colon or bracket, FAILED, a fatal or an abort,
#: a glog error line (E1201 12:00:00...), a C assert, a non-zero exit. Bounded, linear-time.
ERROR_SHAPED = re.compile(
    r"(?:^|[\s(\[:'\"])(?:[a-z_]\w{0,40}\.){0,6}[A-Z]\w{0,60}(?:Error|Exception|Failure)\b(?::|\(|\s*$)"
    r"|(?:^|[\s(\[:'\"])Exception(?::|\(|\s*$)"
    r"|Traceback \(most recent call last\)|\b(?:error|Error|ERROR)\b ?[:\]]|\bFAILED\b|\bfatal(?: error)?:"
    r"|\bpanicked at\b|^Aborted\b|core dumped|\bwhat\(\): |Assertion [`'][^\n]{0,300}[`'] failed"
    # the CUDA runtime's and driver's error names as C++ code prints them ("cudaErrorLaunchFailure: ...")
    r"|\bcuda(?:Error|_ERROR_)[A-Za-z_]{2,60}\b"
    r"|^E\d{4} \d\d:\d\d|returned non-zero exit status [1-9]|exit(?:ed)? with (?:code|status) [1-9]"
    r"|^\s*raise [A-Z]\w{0,60}|^File \"[^\"]{1,500}\", line \d{1,7}|^[\s~]{0,200}\^{3,}[\s~^]{0,400}$"
    r"|The above exception was the direct cause|During handling of the above exception"
    r"|CUDA kernel errors might be asynchronously reported|CUDA_LAUNCH_BLOCKING=1|TORCH_USE_CUDA_DSA"
    # the CUDA-check macros of C++ extensions print without a level: "Failed: Cuda error <file>:<line> '<text>'"
    r"|^Failed: |\bCuda (?:error|failure) "
    # a C/C++ library's own check, "<file>.cpp:<line>: non-zero status: 22 ..." (NVSHMEM's NVSHMEMI_NZ_ERROR_JMP)
    r"|\.(?:c|cc|cpp|cu|cuh|h|hpp):\d{1,6}:? non-zero status\b"
    # Ascend CANN's error codes open its error reports: E<module letter><4 digits> ("EE9999:", "EL0004:", "EI0009:")
    r"|^E[A-Z]\d{4}: ")
#: What a dying process leaves behind, whatever level it is logged at: torch's warning that a process exited holding
#: shared CUDA tensors (torch/csrc/CudaIPCTypes.cpp) or without destroying its process group (ProcessGroupNCCL.cpp),
#: SGLang tearing down its process tree, Python's resource tracker cleaning up after exiting workers. In a tail that
#: never showed the server alive it ends a crash.
DEATH_SIGNS = re.compile(
    r"Producer process has been terminated before all shared CUDA tensors released"
    r"|destroy_process_group\(\) was not called before program exit|kill_process_tree called"
    # vLLM's executor noticing a worker is gone (vllm/v1/executor/multiproc_executor.py, logged at WARNING or ERROR
    # by release): "Worker proc VllmWorker-1 died unexpectedly, shutting down executor."
    r"|died unexpectedly, shutting down executor"
    # CPython's multiprocessing resource tracker as the processes exit (multiprocessing/resource_tracker.py)
    r"|leaked (?:semaphore|shared_memory) objects? to clean up at shutdown")
