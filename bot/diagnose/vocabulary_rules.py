"""Rules for the engines' own refusals in general words: a check of the engine that raises names what it checks
(a quantization method, a setting, a package, a file) and says it refuses it. These catch the messages no log posted
so far shows, in the vocabulary the engines use for each kind of check.

Derived from the engines' sources, not from a log: every ``raise`` of sglang 0.5.9 and vllm 0.11.0 in the modules
whose category is clear from the place (tests/data/engine_messages/, tools/engine_messages.py), four in five of them
read to write these patterns, one in five kept aside to measure them. Below every rule that names a cause exactly
(they win when both match) and above the fallbacks; each verdict stays modest and names what else it could be.
Patterns are linear-time: bounded gaps, no nested quantifiers.
"""

from __future__ import annotations

import re

from bot.diagnose.optional import OPTIONAL_WORDS
from bot.diagnose.setting_phrases import SETTING_PHRASES
from bot.diagnose.types import GPU_GENERATIONS, Rule, r

#: An exception line: a dotted class name, ":" and the message (the engines' checks raise these four, and assert).
_RAISED = (r"^(?:[\w.]{0,80}\.)?(?:ValueError|AssertionError|NotImplementedError|TypeError|RuntimeError|KeyError"
           r"|AttributeError|Exception): ")
#: The words of a quantization method or of its parameters (vllm/model_executor/layers/quantization/,
#: sglang/srt/layers/quantization/: the method names and the config fields their checks refuse).
_QUANT = (r"(?:quantiz\w{0,12}|\bfp8(?!\d)|\bmxfp\d|\bMX\(FP\d\)|\bmxint\d|\bnvfp4|\bfp4(?!\d)|\bawq|\bgptq"
          r"|\bmarlin|\bbnb\b|bitsandbytes|compressed[-_ ]?tensors|\bw\d{1,2}a\d{1,2}\w{0,12}|\bint[48](?!\d)"
          r"|\bmodelopt|\bquark|\bqoq\b|auto_round|\bgguf\b|moe_wna16|weight_bits|num_bits|group[_ ]size|qscheme"
          r"|packing_format|activation_scheme|\bwNa16\b|Fused ?MoE (?:layers?|scheme)|\bscheme\b|\b\d bits?\b|\dbit\b"
          # the rest of the methods vLLM's registry and SGLang's --quantization choices name (vllm layers/quantization/
          # __init__.py QuantizationMethods, 0.8-0.33; sglang 0.5.9 --quantization): unambiguous names only
          r"|\bbitblas|\bhqq\b|\baqlm\b|\bqqq\b|\beetq\b|\bexl2\b|\btorchao\b|\bdeepspeedfp\b|\bfbgemm_fp8\b"
          r"|\bptpc_fp8\b|\bpetit_nvfp4\b|\bmodelslim\b|\bexperts_int8\b|\btpu_int8\b|\bfp_quant\b|\bw4afp8\b"
          r"|\bmxfp8\b)")
#: (for the verdict's alternatives, bot/diagnose/match.py)
QUANT_WORDS = _QUANT
#: How a check says no.
_REFUSE = (r"\b(?:not (?:yet |currently )?supported|unsupported|(?:does |do )?not support|only supports?"
           r"|not (?:yet )?implemented|is implemented only|requires?|Unknown|Invalid|expects?|cannot be used"
           r"|only\b[^\n]{1,80}\b(?:is|are) supported|(?:is|are) required (?:for|by|when))\b")
#: A setting's name as the engines spell it in their checks: a snake_case field or a --flag.
#: (a source file's name is not a setting: "allocation from 'turboquant_attn.py:879:_decode_attention'")
_SETTING = (r"(?-i:(?<![/.])\b[a-z][a-z0-9]{0,30}(?:_[a-z0-9]{1,30}){1,6}\b(?!\.(?:py|pyx|cpp|cc|cu|cuh|h|hpp)\b)"
            r"|(?<![\w-])--[a-z][a-z0-9-]{2,60}"
            # the engines' environment settings ("VLLM_USE_V2_MODEL_RUNNER=1 is no longer supported", vllm 0.34.0
            # platforms/interface.py)
            r"|\b(?:VLLM|SGLANG|SGL)_[A-Z0-9]{1,30}(?:_[A-Z0-9]{1,30}){0,8}\b)")
#: ... and how a check of settings says no.
_SETTING_REFUSED = (r"\b(?:must (?:not )?be|should (?:not )?be|is not (?:supported|compatible|applicable|allowed)"
                    r"|not compatible with|cannot be|can only be|only supported|is required|are required|requires?"
                    r"|needs? to be|has to be|Invalid value|Must be one of|expects? [\w.-]{1,60} to be"
                    r"|is not a valid|please (?:specify|set|enable|disable|provide)|when [\w.-]{1,60} is set"
                    # a value compared with the setting that bounds it ("LoRA rank 64 is greater than max_lora_rank"),
                    # a check of a combination ("When enabling two batch overlap without an EP a2a backend ...")
                    r"|is (?:greater|larger|bigger|smaller|less) than|when enabling"
                    # an option given the wrong way ("With `vllm serve`, you should provide the model as a positional
                    # argument or in a config file instead of via the `--model` option", vllm/entrypoints/cli/serve.py)
                    r"|should (?:provide|pass|use|set|specify)|instead of"
                    # sizes that must agree ("world_size (8) is not equal to tensor_model_parallel_size (4) x
                    # pipeline_model_parallel_size (1)", torch / vLLM parallel_state)
                    r"|is not equal to|must (?:be )?equal(?: to)?"
                    # a setting that only means something with another, a value outside the accepted ones, a
                    # setting a release retired ("cpu_hugepage_block_size applies only to kv_offload_backend=...",
                    # "expected one of 16 or none", "... is no longer supported ... Unset this variable", vllm 0.34.0)
                    r"|applies only (?:to|when|with)|only applies (?:to|when|with)|expected one of"
                    r"|(?:is|are) no longer (?:supported|accepted|used)|Unset this variable)\b")

#: What a check's message may name that is another category's: the drafter, a package, the GPU generation, the
#: tensor-parallel split. Raised by the same argument and quantization checks (sglang/srt/server_args.py: "Spec v2
#: currently only supports topk = 1 for speculative decoding", "FlashInfer mamba module not available, please check
#: flashinfer installation", "TRTLLM MLA backend is only supported on Blackwell GPUs (SM100/SM12x)"), those are that
#: category's. (A quantization check that a weight slice is not divisible is the tensor-parallel split's.)
OTHER_AREA = (r"speculat|\bdraft|\beagle|\bmtp\b|nextn|\bspec v2\b|module (?:was |is )?not (?:found|available)"
              r"|not installed|to be installed|\binstallation\b|compute capability|\bsm_?\d{2,3}|\b" + GPU_GENERATIONS
              + r"\b")

#: A check of the launch settings in the words it alone uses, whether or not it names the setting.
_CONFIG_REFUSAL = (r"\bmutually exclusive\b|\bMust be one of\b|\bSupported values are\b|\bUnrecognized [\w ]{1,40}"
                   r"(?:backend|mode|type|method|format|algorithm)\b|\bis only supported (?:on|for|with|when|in)\b"
                   r"|\bInvalid value for\b|\bcannot be used (?:with|together|when)\b|\bis not supported (?:with|when"
                   r"|in combination)\b|\bdoes not support `?--[a-z]")



def phrase_pattern(phrases: tuple[str, ...]) -> str:
    """One alternation of word runs, built as a trie (each word tried once per position, not once per phrase), so
    the pattern stays linear with a thousand phrases; words may be joined by a space, "_" or "-"."""
    trie: dict = {}
    for phrase in phrases:
        node = trie
        for word in phrase.split():
            node = node.setdefault(word, {})
        node[""] = {}

    def alternation(node: dict) -> str:
        branches = []
        for word in sorted(key for key in node if key):
            rest = node[word]
            longer = {key: value for key, value in rest.items() if key}
            if not longer:
                branches.append(re.escape(word) + "s?")  # "attention backends" names --attention-backend too
                continue
            tail = r"[ _-]" + alternation(longer)
            # a word that ends one phrase and continues another: the continuation is optional
            branches.append(re.escape(word) + (f"(?:{tail})?" if "" in rest else tail))
        return "(?:" + "|".join(branches) + ")"

    return r"(?<![\w-])" + alternation(trie) + r"(?![\w-])"


#: A launch setting named in prose, as the engines' options spell it (setting_phrases.py, from their parsers).
_SETTING_WORDS = phrase_pattern(tuple(SETTING_PHRASES))
_SETTING_WORDS_RE = re.compile(_SETTING_WORDS, re.IGNORECASE)


def flags_named_in_prose(message: str) -> list[str]:
    """The options whose words a check's message uses ("not compatible with chunked prefill": --chunked-prefill-size,
    --enable-chunked-prefill), in the order the message names them."""
    flags: list[str] = []
    for found in _SETTING_WORDS_RE.finditer(message):
        phrase = re.sub(r"[ _-]", " ", found.group(0).lower())
        options = SETTING_PHRASES.get(phrase) or SETTING_PHRASES.get(phrase[:-1], ())
        flags.extend(option for option in options[:2] if option not in flags)
    return flags
#: How a check of a setting named in prose says no or asks for another: the settings checks' words, and looser ones
#: (a bare "must", "unless", "not supported"), since a phrase of an option's words already says a setting is meant.
_SETTING_CONSTRAINT = (r"(?:" + _SETTING_REFUSED + r"|\b(?:not (?:yet |currently )?(?:supported|allowed|applicable)"
                       r"|unsupported|(?:does|do|can) ?not (?:support|be used)|only supports?|must|should|unless"
                       r"|expects?|please use|when setting|is set to|Invalid|Unknown)\b)")

#: AMD's GPU architectures as the engines' ROCm checks name them ("requires CDNA3 or newer", vllm 0.34.0
#: models/step5/amd; "ROCm gfx942", "MI300"): a check of these is of the GPU, as an SM number is.
_AMD_GENERATIONS = r"(?:CDNA ?\d|RDNA ?\d|gfx9\d{2}\w?\b|gfx1[012]\d{2}\b|MI\d{3}[A-Z]?\b)"
#: A GPU generation or compute capability a check asks for, or refuses.
CAPABILITY = (r"(?:\bUnsupported (?:compute|CUDA|device|GPU) capability\b|\b(?:requires?|needs?|only supports?"
               r"|only (?:supported|available|works|runs) (?:on|for|with)|supported only (?:on|for))"
               r" (?:an? )?(?:NVIDIA |AMD )?(?:GPUs? (?:with )?)?(?:\(?SM ?\d{2,3}\w?\b|\(?sm_?\d{2,3}a?\b"
               r"|compute capability|CUDA capability|device capability|" + GPU_GENERATIONS + r"\b|" + _AMD_GENERATIONS
               + r")"
               r"|\b(?:current|this) (?:platform|GPU|device) does not support\b"
               # "Please use Blackwell and above." (vllm layers/quantization/modelopt.py)
               r"|\bplease use (?:an? )?(?:NVIDIA )?" + GPU_GENERATIONS + r"\b"
               r"|\b(?:" + GPU_GENERATIONS + r"|SM ?\d{2,3}|" + _AMD_GENERATIONS + r")(?: GPUs?)? (?:and|or) (?:above|newer"
               r"|later)\b)")

#: The kernel libraries the engines import only for some paths (vllm / sglang import guards: triton, flashinfer,
#: deep_gemm, DeepEP, aiter, mooncake, nixl, ...): "requires <one of these>" says it is not importable here.
#: (a name with a suffix only after a separator: "requires TritonAttnBackend" names a backend, not the package)
_KERNEL_LIBRARIES = (r"(?:triton|flashinfer|cutlass)(?:[_-][a-z]{1,10})?|deep_?gemm|deep_?ep|aiter|mooncake|nixl"
                     r"|xformers|flash[_-]attn|FlashAttention|sgl[_-]kernel|vllm[_-]flash[_-]attn|lmcache|ray")

VOCABULARY_RULES: tuple[Rule, ...] = (
    Rule("quantization_refused", "quantization_unsupported",
         r(_RAISED + r"[^\n]{0,160}?" + _QUANT + r"[^\n]{0,160}?" + _REFUSE
           + r"|" + _RAISED + r"[^\n]{0,160}?" + _REFUSE + r"[^\n]{0,160}?" + _QUANT), 44, 0.55,
         "the quantization method's check refused this checkpoint or GPU", kind="refused",
         unsure=("bad_argument",), exclude=r(OTHER_AREA + r"|\bdivisible\b")),
    Rule("setting_refused", "bad_argument",
         r(_RAISED + r"[^\n]{0,160}?" + _SETTING + r"[^\n]{0,160}?" + _SETTING_REFUSED
           + r"|" + _RAISED + r"[^\n]{0,160}?" + _SETTING_REFUSED + r"[^\n]{0,160}?" + _SETTING), 40, 0.5,
         "the engine's check of its settings refused a value or a combination", unsure=("other",),
         exclude=r(OTHER_AREA)),
    Rule("named_setting_refused", "bad_argument",
         r(_RAISED + r"[^\n]{0,160}?" + _SETTING_WORDS + r"[^\n]{0,160}?" + _SETTING_CONSTRAINT
           + r"|" + _RAISED + r"[^\n]{0,160}?" + _SETTING_CONSTRAINT + r"[^\n]{0,160}?" + _SETTING_WORDS), 39, 0.45,
         "the engine's check of its settings refused a value or a combination", unsure=("other",),
         exclude=r(OTHER_AREA + r"|\bdivisible\b")),
    # A feature a flag turned on that refuses the model's attention type ("HiRadixCache only supports MHA, MLA, and
    # NSA (DSA) models", sglang mem_cache with --enable-hierarchical-cache, sgl-project/sglang#26690): the flag, with
    # the model's support as the alternative.
    Rule("feature_attention_kind", "bad_argument",
         r(r"\b(\w{3,40}) only supports? (?:(?:MHA|MLA|GQA|MQA|NSA|DSA|SWA|Mamba|hybrid|linear[- ]attention|full[- ]"
           r"attention|dense|MoE)(?: \([A-Z]{2,4}\))?(?:,? and |,? or |, | ){0,1}){1,6}models?\b"), 66, 0.6,
         "{0}, which a launch setting turned on, does not support this model's attention type",
         kind="feature_attention", unsure=("unsupported_architecture",), any_level=True),
    Rule("configuration_refused", "bad_argument", r(_RAISED + r"[^\n]{0,200}?(?:" + _CONFIG_REFUSAL + ")"), 38, 0.45,
         "the engine's check of its settings refused this combination", unsure=("other",), exclude=r(OTHER_AREA)),
    # A package the engine checks for at start ("OpenTelemetry is not available ... Ensure OpenTelemetry packages are
    # installed", "FlashInfer mamba module not available, please check flashinfer installation", "X requires AITER
    # to be installed", "flashinfer module was not found").
    Rule("package_unavailable", "missing_dependency",
         r(r"\b(?!(?:the|a|an|this|that|required|requested|such)\b)([\w.-]{1,40}) (?:[\w.-]{1,40} )?"
           r"(?:module|package|library)s? (?:was |is )?not (?:found|available)\b"
           r"|\bplease check ([\w.-]{1,40}) installation\b|\brequires? ([\w.-]{1,40}) to be installed\b"
           r"|\bEnsure [\w .-]{1,60} (?:is|are) installed\b"
           # a kernel library a path needs, named alone at the end of a raised message ("vLLM's model runner
           # requires Triton.", "vLLM on x86 CPUs requires Triton (triton-cpu).", vllm 0.34.0 v1/worker/
           # gpu_worker.py, platforms/cpu.py): the library is not importable here. (Not an attention path's: there
           # "requires FlashInfer" / "Triton" names the attention backend of that name, sgl-project/sglang#28171.)
           r"|" + _RAISED + r"(?![^\n]{0,200}?\battention\b)[^\n]{0,200}?\b(?:requires?|needs?) (?:the )?(?:"
           + _KERNEL_LIBRARIES + r")(?: \([\w.-]{1,40}\))?\.?\s*$"
           # an extension's bindings ("MORI UMBP Python bindings are unavailable", vllm 0.34.0 kv_connector/v1/umbp)
           r"|\b(?:Python |C\+\+ |native )?(?:bindings|extension) (?:is|are) (?:unavailable|not available)\b"
           # ... or named as what a module needs ("vllm.vllm_flash_attn requires the CUDA flash attention extensions
           # (_vllm_fa2_C or _vllm_fa3_C)", vllm vllm_flash_attn/__init__.py of a build without them)
           r"|\brequires (?:the )?[\w -]{1,40} extensions? \((\w{1,40})"),
         60, 0.7, "a package the engine checks for at start is not installed ({0}{1}{2}{3})", kind="module",
         # (a kernel library's own build cache missing a module is its JIT's, flashinfer's MissingJITCacheError; an
         # optional one the engine carries on without is no crash, bot/diagnose/optional.py)
         exclude=r(r"JIT cache|MissingJITCacheError|" + OPTIONAL_WORDS)),
    # A check of the GPU's generation or compute capability ("Unsupported compute capability: 86. Supported: 9.x",
    # sglang jit_kernel/flash_attention; "X requires SM100", "only supports sm_90a"): the architecture's, unless the
    # feature refused is a quantization method, which the taxonomy files as "quantization method unsupported on this
    # GPU" (vllm layers/quantization/: "MXFP8 MoE quantization requires SM100.").
    Rule("gpu_capability_quantization", "quantization_unsupported",
         r(_RAISED + r"[^\n]{0,160}?" + _QUANT + r"[^\n]{0,160}?" + CAPABILITY
           + r"|" + _RAISED + r"[^\n]{0,160}?" + CAPABILITY + r"[^\n]{0,160}?" + _QUANT), 46, 0.55,
         "the quantization kernels need another GPU generation than this one", kind="gpu",
         unsure=("cuda_arch_or_driver",)),
    Rule("gpu_capability_refused", "cuda_arch_or_driver",
         r(_RAISED + r"[^\n]{0,160}?" + CAPABILITY), 45, 0.55,
         "a feature of this launch needs another GPU generation (compute capability) than this one", kind="generation",
         unsure=("bad_argument",), exclude=r(_QUANT)),
    # The KV cache (or another per-request cache: mamba state) named with too little room for it ("Not enough space
    # for mamba cache, try to increase --mamba-full-memory-ratio", sglang mem_cache/memory_pool.py; "insufficient
    # memory to allocate kv cache", vllm attention/layer.py).
    Rule("cache_room_short", "kv_cache_insufficient",
         r(r"\b(?:not enough|insufficient) (?:GPU )?(?:memory|space|room) (?:to allocate|for) (?:the )?"
           r"(?:\d{1,12} blocks of (?:the )?)?(?:[\w-]{1,20} )?(?:kv[ _-]?)?cache\b"
           # more sequences than the cache has blocks for ("max_num_seqs (1024) exceeds available Mamba cache blocks
           # (856)", vllm-project/recipes#551)
           r"|\bexceeds? (?:the )?available (?:[\w-]{1,20} )?(?:kv[ _-]?)?cache blocks\b"
           # SGLang's scheduler when one request no longer fits the KV pool ("No space left for only one request,
           # self.token_to_kv_pool_allocator.available_size()=0", managers/schedule_policy.py / scheduler.py)
           r"|\bNo space left for (?:only )?one request\b|\bkv_pool\w{0,30}\.available_size\(\)=0\b"
           # SGLang's mamba state pools ("Not enough space for mamba ping pong idx, try to increase
           # --mamba-full-memory-ratio")
           r"|\bNot enough space for mamba\b"
           # vLLM's fitting of the context to the memory left ("Cannot auto-fit max_model_len: not enough GPU memory
           # available to serve even a single token", v1/core/kv_cache_planning.py, 0.34.0) and a budget that leaves
           # "KV cache for one max_model_len request" short (0.34.0 kernels/linear/mixed_precision)
           r"|\bCannot auto-fit max_model_len\b|\bnot enough (?:GPU |device )?memory (?:available |left )?to serve\b"
           r"|\bKV cache for (?:one|a single) (?:max_model_len )?request\b"), 70, 0.75,
         "too little GPU memory is left for the cache the engine allocates after the weights", kind="raise"),
    # The loader's checks of the model folder (model_loader/weight_utils.py, loader.py, ci_weight_validation.py).
    Rule("checkpoint_files_unusable", "model_files_missing_or_corrupt",
         r(r"Cannot find any [\w-]{1,30} ?model weights|Could not find checkpoint files|The file size different is "
           r"more than|model files are (?:still )?corrupted|Cannot find adapter config file"), 72, 0.75,
         "the model folder's checkpoint files are missing, incomplete or not in the form the loader needs",
         kind="path"),
)
