"""Structural rules, as data: an exception decided by its class, where it was raised (the package path of its
innermost frames) and what else the tail holds, for wordings no phrase rule knows yet.

A phrase rule (bot/diagnose/rules.py) knows one message; a structural rule knows a place: an AttributeError raised
inside the engine's generic Transformers fallback model class (vllm/model_executor/models/transformers.py,
sglang/srt/models/transformers.py) means the engine has no implementation of the architecture, whatever the
attribute; any exception out of flashinfer/jit/, torch/utils/cpp_extension.py or triton/runtime/build.py is a JIT
build failing; out of torch/_inductor/ a torch.compile failure; out of huggingface_hub/ the Hub; out of
speculative/ or spec_decode/ the drafter. Priorities sit below the phrase rules that name a cause exactly (those
win when both match) and above the native-crash and kill rules. Frame paths are the engines' own source layout
(github.com/vllm-project/vllm, github.com/sgl-project/sglang); patterns are bounded (linear-time).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.diagnose.comm_rules import GLOO_TRANSPORT
from bot.diagnose.types import Rule, r
from bot.diagnose.structure import RaisedException, TailStructure
from bot.diagnose.vocabulary_rules import CAPABILITY, OTHER_AREA
from bot.diagnose.weights_rules import FALLBACK_CLASS

_ANY = r(r"^(.{1,300})")


@dataclass(frozen=True)
class StructureRule:
    rule: Rule  # category, priority, confidence, cause ("{0}": the exception line), kind; rule.pattern: the class
    frames: re.Pattern[str] | None = None  # searched in "path function" of the innermost ``depth`` frames
    depth: int = 8
    message: re.Pattern[str] | None = None  # the exception's message must match
    exclude: re.Pattern[str] | None = None  # ... and must not match
    tail: re.Pattern[str] | None = None  # some line of the tail must match


def _s(name: str, category: str, exception: str, priority: int, confidence: float, cause: str, *,
       kind: str | None = None, frames: str | None = None, depth: int = 8, message: str | None = None,
       exclude: str | None = None, tail: str | None = None, unsure: tuple[str, ...] = ()) -> StructureRule:
    return StructureRule(Rule(name, category, r(exception), priority, confidence, cause, kind=kind, unsure=unsure),
                         r(frames) if frames else None, depth, r(message) if message else None,
                         r(exclude) if exclude else None, r(tail) if tail else None)


_CONFIG_ERRORS = r"^(?:ValueError|AssertionError|TypeError|NotImplementedError|KeyError|AttributeError)$"

STRUCTURE_RULES: tuple[StructureRule, ...] = (
    _s("fallback_model_class", "unsupported_architecture", r"^(?:AttributeError|NotImplementedError|TypeError|"
       r"ValueError|KeyError|AssertionError)$", 74, 0.8,
       "the engine has no implementation of this architecture: its generic Transformers fallback failed ({0})",
       kind="fallback", frames=r"(?:vllm/model_executor|sglang/srt)/models/transformers(?:_\w{1,30})?(?:\.py|/)",
       depth=4),
    _s("fallback_named", "unsupported_architecture", r"^(?:AttributeError|NotImplementedError)$", 70, 0.7,
       "the engine runs this model through its generic Transformers fallback class, which failed ({0})",
       kind="fallback", message=FALLBACK_CLASS),
    _s("fallback_in_tail", "unsupported_architecture", r"^(?:AttributeError|NotImplementedError)$", 56, 0.6,
       "the engine resolved the model to its generic Transformers fallback class, which failed ({0})",
       kind="fallback", tail=r"Resolved architecture: Transformers|" + FALLBACK_CLASS + r"|model_impl=.?transformers"),
    # A bare AssertionError whose raising line checks the split ("assert self.total_num_kv_heads % tp_size == 0",
    # vllm models/chatglm.py; vllm-project/vllm#1581): the source line Python prints under the frame says it.
    _s("assert_split_by_tp", "tp_not_divisible", r"^AssertionError$", 72, 0.8,
       "a model dimension is not divisible by the tensor-parallel size (the engine's assert on the split: {0})",
       # (the tail, not the frames: a pasted excerpt often starts mid-frame, with the File line cut)
       kind="heads", tail=r"^\s{0,12}assert [\w.()\[\] ]{1,80} % \(?[\w.]{0,40}(?:tp_size|tensor_parallel_size"
       r"|tp_world_size|world_size|\btp)\)? ?== ?0", message=r"^$"),
    # ... and one that checks the GPU can run the FlashAttention version picked (vllm/attention/backends:
    # "assert is_fa_version_supported(self.fa_version)"; vllm_flash_attn: FA2 needs compute capability 8.0, FA3 9.0).
    _s("assert_fa_version", "cuda_arch_or_driver", r"^AssertionError$", 72, 0.75,
       "this GPU cannot run the FlashAttention version the engine picked: it needs a newer GPU",
       kind="fa_version", tail=r"^\s{0,12}assert (?:not )?is_fa_version_supported\(", message=r"^$"),
    _s("unrecognized_model", "model_files_missing_or_corrupt", r"^ValueError$", 70, 0.75,
       "the model folder's config.json has no usable model_type ({0})", kind="path",
       message=r"^Unrecognized model in"),
    # Engines import optional kernel packages in try/except; the first call then fails with a NameError on the
    # package's name (sgl-project/sglang#37105: "name 'deep_gemm' is not defined").
    _s("guarded_import_missing", "missing_dependency", r"^NameError$", 58, 0.6,
       "a kernel package the engine imports optionally is missing, and this code path needs it ({0})", kind="module",
       message=r"^name '[a-z][a-z0-9]{1,30}(?:_[a-z0-9]{1,30}){0,4}' is not defined"),
    _s("registry_failed", "unsupported_architecture", r".", 60, 0.65,
       "the engine's model registry could not load this architecture ({0})", kind="inspect",
       frames=r"/models/registry\.py", depth=3),
    _s("jit_build_frames", "jit_compile_failure", r".", 64, 0.75, "a JIT kernel build failed ({0})", kind="build",
       frames=r"flashinfer/jit/|torch/utils/cpp_extension\.py|deep_gemm/jit|triton/runtime/build\.py"
       # (a kernel module refusing this GPU's capability is the architecture's, not a build's)
       r"|/jit_kernel/|tvm_ffi/|triton/compiler/", depth=6, exclude=r"out of memory|no kernel image|" + CAPABILITY),
    _s("torch_compile_frames", "jit_compile_failure", r".", 60, 0.7, "torch.compile failed ({0})",
       kind="torch_compile", frames=r"torch/_inductor/|torch/_dynamo/", depth=6, exclude=r"out of memory"),
    # (urllib3's ProtocolError "('Connection aborted.', ConnectionResetError(104, ...))" and http.client's
    # RemoteDisconnected / IncompleteRead: a connection the network or a proxy cut mid-download)
    _s("hub_frames", "hub_access", r"(?:HTTPError|ConnectionError|Timeout|MaxRetryError|NotFoundError|OSError"
       r"|SSLError|ProxyError|NameResolutionError|EntryNotFoundError|ProtocolError|ConnectionResetError"
       r"|RemoteDisconnected|IncompleteRead|ChunkedEncodingError)$", 66, 0.75,
       "the engine could not fetch from the model hub ({0})", kind="network",
       frames=r"huggingface_hub/|modelscope/hub|requests/adapters\.py|urllib3/", depth=6),
    _s("safetensors_frames", "model_files_missing_or_corrupt", r".", 64, 0.75,
       "a safetensors file could not be read ({0})", kind="corrupt", frames=r"safetensors", depth=3,
       exclude=r"out of memory"),
    # A JSON file of the model folder that does not parse (tokenizer.json, config.json, *_config.json): raised by
    # json while transformers / huggingface_hub read it.
    _s("model_json_unreadable", "model_files_missing_or_corrupt", r"JSONDecodeError$", 66, 0.7,
       "a JSON file of the model folder is not valid JSON (a truncated download or a git-lfs pointer?) ({0})",
       kind="corrupt", frames=r"transformers/(?:tokenization|configuration|models/auto|utils/hub)|huggingface_hub/"
       r"|tokenizers|transformers_utils/(?:config|tokenizer)|hf_transformers_utils", depth=8),
    _s("config_class_frames", "transformers_too_old", r"^(?:KeyError|ValueError)$", 66, 0.75,
       "the installed transformers does not know this model's config class ({0})",
       frames=r"transformers/models/auto/(?:configuration|modeling|tokenization)_auto", depth=3,
       exclude=r"Unrecognized model in|does not appear to have"),
    # A config class of transformers without a field the engine's model code reads ("'Qwen2MoeConfig' object has no
    # attribute 'mlp_only_layers'", QwenLM/Qwen3#724, fixed by a newer transformers; raised through transformers/
    # configuration_utils.py __getattribute__): the installed transformers does not match the model. Below the
    # fallback-class and speculative rules, which place the same AttributeError when their frames are on the stack.
    # A field every text model's config has (hidden_size, num_hidden_layers, vocab_size, ...) or a multimodal config's
    # parts (vision_config, text_config) missing: the config object is of another shape than the engine's model code
    # expects (a wrapper config of remote code, "'InternVLChatConfig' object has no attribute 'hidden_size'",
    # sgl-project/sglang#3182; a checkpoint of another family under a known name, "'LlavaConfig' object has no
    # attribute 'vision_config'", apple/ml-fastvlm#28): the engine does not support this model's form, not an old
    # transformers (which has such basic fields in every release).
    _s("config_shape_unexpected", "unsupported_architecture", r"^AttributeError$", 51, 0.55,
       "the model's config is not of the shape this engine's model code reads ({0}): the engine does not support "
       "this checkpoint's form of the architecture", kind="config_shape",
       message=r"^'[A-Z]\w{0,80}Config' object has no attribute '(?:hidden_size|num_hidden_layers|num_attention_heads"
               r"|num_key_value_heads|vocab_size|intermediate_size|max_position_embeddings|vision_config|text_config"
               r"|llm_config|language_config)'",
       unsure=("transformers_too_old", "model_files_missing_or_corrupt")),
    _s("config_field_missing", "transformers_too_old", r"^AttributeError$", 50, 0.55,
       "the installed transformers' config class lacks a field this model's code reads ({0})",
       kind="config_field", message=r"^'[A-Z]\w{0,80}Config' object has no attribute '\w{1,80}'",
       unsure=("unsupported_architecture", "model_files_missing_or_corrupt")),
    _s("speculative_frames", "speculative_config_invalid", _CONFIG_ERRORS[:-2] + ")$", 66, 0.7,
       "the speculative-decoding (MTP/EAGLE) path failed for this model or engine "
       "version ({0})",
       frames=r"/speculative/|/spec_decode/|/speculative\.py|eagle|_mtp\b|mtp_|/spec_info|draft|nextn|medusa",
       depth=4,
       exclude=r"out of memory"),
    _s("validation_speculative", "speculative_config_invalid", r"ValidationError$", 70, 0.8,
       "vLLM rejected the speculative-decoding configuration ({0})", message=r"\bfor SpeculativeConfig\b"),
    # The tail may end inside a traceback (its exception line cut): a capability check on the stack still tells.
    # vLLM validates its config classes with pydantic: "1 validation error for SchedulerConfig" + "Value error, ...".
    _s("validation_config", "bad_argument", r"ValidationError$", 54, 0.65,
       "vLLM rejected a launch setting ({0})",
       message=r"\bfor (?:Scheduler|Model|Cache|Parallel|Device|Load|LoRA|Lora|Compilation|Vllm|Observability|Pooler"
               r"|Decoding|StructuredOutputs|Kv\w{0,20}|MultiModal)Config\b"),
    _s("quantization_capability_frames", "quantization_unsupported", r"^[\w.]{0,200}$", 66, 0.7,
       "the quantization kernels check the GPU's capability and refuse it ({0})", kind="gpu",
       frames=r"/layers/quantization/[^ ]{0,200} \w{0,80} [^\n]{0,200}(?:check_\w{0,40}support|capabilit)", depth=6),
    _s("dtype_capability_frames", "cuda_arch_or_driver", r"^[\w.]{0,200}$", 66, 0.7,
       "the engine checks the GPU's support for the dtype and refuses it ({0})", kind="bf16",
       frames=r" _?check_if_gpu_supports_dtype| \w{0,30}check\w{0,20}(?:compute_capability|gpu_supports)", depth=4),
    _s("quantization_frames", "quantization_unsupported", r"^(?:ValueError|NotImplementedError|AssertionError"
       r"|KeyError|TypeError)$", 60, 0.7, "the quantization method failed for this model or GPU ({0})",
       kind="unknown", frames=r"/layers/quantization/", depth=4),
    _s("distributed_frames", "nccl_error", r"(?:RuntimeError|DistBackendError|DistNetworkError|DistError"
       r"|DistStoreError)$", 60, 0.7, "multi-GPU communication (torch.distributed / NCCL) failed ({0})",
       kind="nccl", frames=r"torch/distributed/|pynccl|parallel_state\.py|device_communicators/|custom_all_reduce",
       depth=4, exclude=r"out of memory|Address already in use|EADDRINUSE"),
    _s("graph_capture_frames", "cuda_graph_oom", r"(?:RuntimeError|AssertionError|Exception|CUDAError)$", 56, 0.6,
       "CUDA graph capture failed ({0})", kind="capture",
       frames=r"cuda_graph_runner|capture_model|capture_one_batch|cudagraph|graph_capture", depth=12,
       exclude=GLOO_TRANSPORT.pattern),  # (a transport error of the ranks inside the capture: bot/diagnose/rules.py)
    _s("arguments_frames", "bad_argument", _CONFIG_ERRORS, 54, 0.65,
       "the engine rejected a combination of its arguments ({0})", exclude=OTHER_AREA,
       # vllm/config/ also holds run-time helpers (get_layers_from_vllm_config looking a layer up): only its
       # checks are the arguments' (kaito-project/kaito#1956 was a KeyError of the helper, an engine bug)
       frames=r"sglang/srt/server_args\.py|vllm/engine/arg_utils\.py|vllm/config(?:/\w{1,40})?\.py "
              r"(?:__post_init__|_?verify\w{0,40}|_?validate\w{0,40}|_?check\w{0,40}|__init__|create_\w{0,30}config"
              r"|_?set_\w{0,40}|try_verify\w{0,30})\b", depth=3),
    # (A TypeError too: a speculative setting left unset reaches a comparison as None, "'>' not supported between
    # instances of 'NoneType' and 'int'", vllm-project/vllm#55444, sgl-project/sglang#22895.)
    _s("speculative_enabled", "speculative_config_invalid", r"^(?:AttributeError|NotImplementedError"
       r"|AssertionError|TypeError)$", 48, 0.5, "the crash ({0}) struck with speculative decoding (MTP/EAGLE) on; the drafter "
       "is the usual trigger", tail=r"--speculative[-_](?:algorithm|config|model)|speculative_config=\{|"
       r"speculative_algorithm='(?:EAGLE|NEXTN|MTP)|'speculative_algorithm': '(?:EAGLE|NEXTN|MTP|STANDALONE)"
       r"|speculative_config=SpeculativeConfig\(|'speculative_config': \{"),
)


def _frames_text(exc: RaisedException, depth: int) -> list[str]:
    return [f"{frame.path} {frame.function} {frame.code}" for frame in exc.innermost(depth)]


def structural_hits(structure: TailStructure, texts: list[str],
                    skip: set[int]) -> list[tuple[Rule, int, re.Match[str]]]:
    """(rule, position, match of the exception line) for every exception a structural rule explains."""
    hits: list[tuple[Rule, int, re.Match[str]]] = []
    tail_cache: dict[str, bool] = {}
    for exc in structure.exceptions:
        if exc.pos in skip:
            continue
        for srule in STRUCTURE_RULES:
            if not srule.rule.pattern.search(exc.qualname):
                continue
            if srule.message is not None and not srule.message.search(exc.message):
                continue
            if srule.exclude is not None and srule.exclude.search(exc.message):
                continue
            if srule.frames is not None and not any(srule.frames.search(f) for f in _frames_text(exc, srule.depth)):
                continue
            if srule.tail is not None:
                key = srule.rule.name
                if key not in tail_cache:
                    tail_cache[key] = any(srule.tail.search(text) for text in texts)
                if not tail_cache[key]:
                    continue
            match = _ANY.search(texts[exc.pos])
            if match is not None:
                hits.append((srule.rule, exc.pos, match))
    return hits


#: Where in an engine an exception was raised, and the category that place usually means: only a hint (the
#: alternatives of an unrecognised crash), never a verdict on its own.
AREA_HINTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (r(r"sglang/srt/mem_cache/|kv_cache|block_pool|memory_pool"), "kv_cache_insufficient"),
    (r(r"cuda_graph_runner|cudagraph|capture_model"), "cuda_graph_oom"),
    (r(r"/speculative/|/spec_decode/|eagle|_mtp\b|mtp_"), "speculative_config_invalid"),
    (r(r"model_loader/|weight_utils|load_weights|weight_loader"), "model_files_missing_or_corrupt"),
    (r(r"torch/_inductor/|torch/_dynamo/|flashinfer/jit/|/triton/|cpp_extension|deep_gemm"), "jit_compile_failure"),
    (r(r"torch/distributed/|pynccl|parallel_state|device_communicators"), "nccl_error"),
    (r(r"/layers/quantization/"), "quantization_unsupported"),
    (r(r"/models/registry\.py|(?:vllm/model_executor|sglang/srt)/models/transformers"), "unsupported_architecture"),
    (r(r"server_args\.py|arg_utils\.py|vllm/config"), "bad_argument"),
)


def hinted_categories(structure: TailStructure) -> list[str]:
    """Categories suggested by where the last exception (and its chained causes) were raised, innermost first."""
    out: list[str] = []
    exc = structure.last_exception
    seen = 0
    while exc is not None and seen < 4:
        for frame in exc.innermost(6):
            text = f"{frame.path} {frame.function}"
            for pattern, category in AREA_HINTS:
                if pattern.search(text) and category not in out:
                    out.append(category)
        exc, seen = exc.chained_from, seen + 1
    return out
