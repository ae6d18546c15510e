"""Crash rules only vLLM produces, as data (planners.engines.base.CrashRule); the diagnoser adds them to its
engine-neutral ones (bot/diagnose/rules.py, signals.py) when the deployment runs vLLM, or when the engine is unknown.

Each pattern is one of vLLM's own messages, from its source at the releases deploybot serves (0.8-0.2x):
- vllm/v1/core/kv_cache_utils.py: "To serve at least one request with the models's max seq len (N), (X GiB KV cache
  is needed, which is larger than the available KV cache memory (Y GiB)"; vllm/worker/worker.py (V0): "No available
  memory for the cache blocks", "The model's max seq len (N) is larger than the maximum number of tokens that can be
  stored in KV cache (M)";
- vllm/v1/worker/gpu_worker.py / vllm/utils: "Free memory on device (X/Y GiB) on startup is less than desired GPU
  memory utilization (U, Z GiB)";
- vllm/v1/engine/core_client.py: "Engine core proc EngineCore_0 died unexpectedly, shutting down client.";
- vllm/platforms/__init__.py: "No platform detected, vLLM is running on UnspecifiedPlatform"; vllm/config: "Failed to
  infer device type";
- vllm/config (SchedulerConfig): "max_num_batched_tokens (N) is smaller than max_model_len (M)";
- vllm/entrypoints/openai/cli_args.py: "Error: --enable-auto-tool-choice requires --tool-call-parser", the parser
  managers' "invalid tool call parser: X (chose from { ... })" / "invalid reasoning parser: X";
- vllm/model_executor/layers/quantization/utils/marlin_utils.py: "... is not divisible by min_thread_k = 128.
  Consider reducing tensor_parallel_size or running with --quantization gptq.";
- vllm/engine/arg_utils.py ``_raise_or_warning``: "VLLM_USE_V1=1 is not supported with {feature}" (raised) and
  "{feature} is not supported by the V1 Engine. Falling back to V0." (a warning, excluded):
  https://github.com/vllm-project/vllm/pull/13726; Model Runner V2's "... is not yet supported in MRV2";
- vllm/model_executor/models/registry.py: "Model architectures ['Qwen2ForCausalLM'] failed to be inspected. Please
  check the logs for more details." and "Error in inspecting model architecture 'X'"
  (https://github.com/vllm-project/vllm/issues/17341);
- vllm/engine/arg_utils.py: "The draft model config's max_model_len (N) is less than the deployment's max_model_len
  (M)" (vllm-project/vllm#22935);
- vllm/executor/ray_utils.py: "The number of required GPUs exceeds the total number of available GPUs in the
  cluster" (k8s limits below --tensor-parallel-size: vllm-project/vllm#3416);
- vllm/model_executor/models/transformers.py: "The Transformers implementation of X is not compatible with vLLM",
  "X has no vLLM implementation and the Transformers implementation is not compatible with vLLM"
  (https://github.com/vllm-project/vllm/issues/15046).
Patterns are linear-time: bounded gaps, no nested quantifiers (tests/adversarial.py checks them on 1 MB lines).
"""

from __future__ import annotations

import re

from ..base import CrashRule


def _r(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


#: The subject of a "not supported" message is a model architecture (a class name such as Qwen2ForCausalLM).
#: Possessive (no backtracking into the name), then its ending checked behind: CausalLM, ...Generation, ...Model.
_ARCH = r"\[?'?\b[A-Z]\w{1,120}+(?:(?<=LM)|(?<=Model)|(?<=tion)|(?<=Seq))'?\]?"
#: The newer engine or model runner that refuses a feature (vLLM V1, its Model Runner V2).
_NEW_RUNNER = r"(?:the )?(?:vLLM )?(?:V1(?: Engine| engine)?|V1 model runner|Model ?Runner ?V2|MRV2)\b"
_NOT_SUPPORTED = r"(?:is|are) (?:not|not yet|currently not) supported (?:by|in|on|with|for) "
_NEW_RUNNER_CI = r"(?i:" + _NEW_RUNNER + ")"
_FALLING_BACK = _r(r"Falling back to V0")
_IMPORT_FAILED = r"Failed to import from [\w.]{1,80} with \w{0,40}Error|No module named '[\w.]{1,80}'"
#: What the engine's death without a Python error most often is (the two monitors' lines below say no more).
_DIED_UNSEEN = ("the vLLM engine process died without a Python error (killed from outside: most often the host OOM "
                "killer)")

RULES: tuple[CrashRule, ...] = (
    # ------------------------------------------------------------------ the KV cache
    CrashRule("kv_no_cache_blocks", "kv_cache_insufficient", _r(r"No available memory for the cache blocks"), 82, 0.9,
              "the weights and activations leave no memory for KV cache blocks within gpu_memory_utilization",
              kind="raise"),
    # vLLM checks at start, before any weight loads, that the GPU has the memory its utilisation asks for; other
    # processes hold the rest. Not the KV cache (nothing is loaded yet): the taxonomy's "none of the above", as the
    # three collections that met it labelled it; the advice is the busy GPU's (advice/memory.py advise_busy_gpu).
    # (Also the message wrapped by hand or by a console after "desired", vllm-project/vllm-ascend#14631: the
    # utilisation is then not on the line, and the cause leaves out its parenthesis.)
    CrashRule("free_memory_startup", "other",
              _r(r"Free memory on device(?: \S+)? \(([\d.]+)/([\d.]+) GiB\) on startup is less than desired(?: GPU "
                 r"memory utilization \(([\d.]+)|\s*$)"),
              82, 0.9, "only {0} of {1} GiB is free on the GPU (other processes hold the rest), less than "
              "the share --gpu-memory-utilization asks for ({2})", kind="busy_gpu",
              unsure=("kv_cache_insufficient",)),
    # (vllm/v1/worker/gpu_model_runner.py load_model: "Failed to load model - not enough GPU memory. Try lowering
    # --gpu-memory-utilization to free memory for weights")
    CrashRule("weights_no_room", "gpu_oom_weights",
              _r(r"Failed to load model - not enough GPU memory"), 82, 0.85,
              "the weights do not fit in the memory --gpu-memory-utilization leaves them", kind=None),
    CrashRule("kv_max_len", "kv_cache_insufficient",
              _r(r"max seq len \((\d+)\) is larger than the maximum number(?: of tokens that can be stored in KV "
                 r"cache \((\d+)\))?"),
              82, 0.9, "the context length {0} does not fit in the KV cache ({1} tokens)", kind="context"),
    CrashRule("kv_v1_needed", "kv_cache_insufficient",
              _r(r"To serve at least one request with the models?'s max seq len \((\d+)\)"), 82, 0.9,
              "one request at the full context length {0} needs more KV cache than is left", kind="context"),
    # The same check's message cut at a console's width, before its numbers, or retold short by the person pasting it
    # ("ValueError: 1.75 GiB KV cache is needed, available 0.13 GiB", allenai/olmocr#269).
    CrashRule("kv_v1_needed_cut", "kv_cache_insufficient",
              _r(r"GiB KV cache is needed, which is larger than the available KV\b"
                 r"|\blarger than the available KV cache memory \([\d.]+ GiB\)"
                 r"|\b[\d.]{1,10} ?GiB KV cache is needed,? (?:but |only )?available:? [\d.]{1,10} ?GiB\b"), 81, 0.85,
              "one request at the full context length needs more KV cache than is left", kind="context"),
    # ------------------------------------------------------------------ the engine process, the platform
    CrashRule("engine_died", "host_oom_killed",
              # (bounded: a 1 MB line of one token stays linear; the client's line is the next rule's)
              _r(r"(?<!Engine core proc )EngineCore\S{0,80} died unexpectedly|Worker proc \S{1,80} died unexpectedly"),
              20, 0.45, _DIED_UNSEEN, any_level=True,  # (the executor logs it at WARNING in some releases)
              unsure=("other",)),
    # The client's monitor (v1/engine/core_client.py monitor_engine_cores) logs the same when the engine exits first,
    # also at the end of an offline script, outputs printed, nothing wrong (vllm-project/vllm#28838, #32468): from
    # the line alone, that is the other reading. (The executor's own "Worker proc ... shutting down executor" is
    # not logged at a normal shutdown: multiproc_executor.py monitors only while not shutting down.)
    CrashRule("engine_client_monitor", "host_oom_killed", _r(r"Engine core proc \S{1,80} died unexpectedly"),
              20, 0.45, _DIED_UNSEEN, any_level=True, kind="engine_gone", unsure=("none",)),
    # No GPU visible to the process (e.g. a container started without --gpus): the INFO line, then the error.
    CrashRule("no_platform", "cuda_arch_or_driver",
              _r(r"No platform detected, vLLM is running on UnspecifiedPlatform|Failed to infer device type"), 78,
              0.8, "the engine sees no GPU platform: no GPU or driver is visible to the process (container without "
              "--gpus?)", kind="driver", any_level=True),
    # ------------------------------------------------------------------ its config checks
    CrashRule("batched_tokens_below_context", "bad_argument",
              _r(r"max_num_batched_tokens \((\d{1,9})\) is smaller than max_model_len \((\d{1,9})\)"), 80, 0.85,
              "--max-num-batched-tokens {0} is smaller than --max-model-len {1} without chunked prefill",
              kind="batched_tokens"),
    # vllm/entrypoints/openai/cli_args.py validate_parsed_serve_args and the parser managers: a tool-call or
    # reasoning parser it does not have, or auto tool choice without a parser.
    CrashRule("unknown_parser", "bad_argument",
              _r(r"invalid (tool call|reasoning) parser: ([\w.-]{1,80})|--enable-auto-tool-choice requires "
                 r"--tool-call-parser"), 82, 0.9, "this vLLM has no {0} parser {1}", kind="parser"),
    # ------------------------------------------------------------------ a newer runner refuses a feature / model
    CrashRule("v1_architecture", "unsupported_architecture",
              re.compile(r"VLLM_USE_V1=1 is not supported with (" + _ARCH + r")|(" + _ARCH + r") " + _NOT_SUPPORTED
                         + _NEW_RUNNER_CI),
              80, 0.85, "this vLLM's V1 engine does not run the architecture {0}{1}", kind="v1",
              exclude=_FALLING_BACK),
    CrashRule("v1_quantization", "quantization_unsupported",
              _r(r"\b(fp8|fp4|nvfp4|mxfp4|awq|gptq|marlin|bitsandbytes|gguf|w8a8|int8|int4|quantization)\b"
                 r"[^\n]{0,120}" + _NOT_SUPPORTED + _NEW_RUNNER),
              79, 0.8, "this vLLM's V1 engine does not support {0} quantization here", kind="v1",
              exclude=_FALLING_BACK),
    # Its Model Runner V2 gate (vllm/config/vllm.py _validate_v2_model_runner): "VLLM_USE_V2_MODEL_RUNNER does not yet
    # support: hybrid/mamba models" (a pydantic "Value error" line), "Model Runner V2 requires Triton."
    # (intel/intel-xpu-backend-for-triton#7158, vllm-project/vllm#57684).
    # The same gate refusing a speculative method ("Model Runner V2 does not yet support: ngram/ngram_gpu speculative
    # decoding", intel/intel-xpu-backend-for-triton#7166): the drafter setting is what to change.
    # The memory profile leaving nothing for the KV cache: vllm/v1/worker/gpu_worker.py logs "Available KV cache memory:
    # %.2f GiB" at INFO, negative when weights and activations took more than --gpu-memory-utilization allows
    # (vllm-project/vllm-ascend#9372); the error that follows may be cut from the tail. V0's worker.py says it as "the
    # rest of the memory reserved for KV Cache is -1.05GiB." (vllm-project/vllm#13882), its engine as "# GPU blocks:
    # 0" (llm_engine.py _initialize_kv_caches, "# %s blocks: %d, # CPU blocks: %d"), V1's kv_cache_utils.py as "GPU KV
    # cache size: 0 tokens".
    CrashRule("kv_budget_negative", "kv_cache_insufficient",
              _r(r"(?:Available KV cache memory: |memory reserved for KV Cache is )(-\d[\d.]{0,10}) ?GiB"), 72, 0.75,
              "the weights and activations took more than --gpu-memory-utilization allows: {0} GiB left for the KV "
              "cache", any_level=True),
    # A setting that turned the hybrid KV-cache manager off (--disable-hybrid-kv-cache-manager, a KV connector such
    # as LMCache's, KV offloading) on a model whose layers keep different caches (sliding window, Mamba, linear
    # attention): vllm/v1/core/kv_cache_utils.py "Hybrid KV cache manager is disabled but failed to convert the KV
    # cache specs to one unified type." (vllm-project/vllm#42911, kaito-project/kaito#2008).
    CrashRule("hybrid_kv_manager_off", "bad_argument",
              _r(r"Hybrid KV cache manager is disabled but failed to convert the KV cache specs"), 80, 0.75,
              "a launch setting turned vLLM's hybrid KV-cache manager off, and this model's layers need different "
              "KV caches (sliding window, Mamba or linear attention)", kind="hybrid_kv", any_level=True),
    # No attention backend of this build fits the model on this GPU (vllm/v1/attention/selector.py / platforms:
    # "No valid attention backend found for cuda with AttentionSelectorConfig(...). Reasons: {...}", each backend's
    # reasons naming the compute capability, sparse MLA, the KV dtype; vllm-project/vllm#54059 on sm_89).
    CrashRule("no_attention_backend", "cuda_arch_or_driver",
              _r(r"No valid attention backend found for (\w{2,10})\b"), 74, 0.6,
              "no attention backend of this vLLM build runs this model's attention on this GPU ({0})",
              kind="no_backend", unsure=("bad_argument",), any_level=True),
    # vLLM's MoE kernel oracle: no backend of a quantization's MoE path for this GPU and settings ("No MXFP4 MoE
    # backend supports the deployment configuration.", vllm-project/vllm#57821), and a backend named by setting that
    # the path does not offer ("moe_backend='emulation' is not supported for FP8 MoE. Expected one of [...]",
    # vllm-project/vllm#46752): the setting's value.
    CrashRule("no_quantized_moe_backend", "quantization_unsupported",
              _r(r"No (\w{2,20}) MoE backend supports the deployment configuration"), 78, 0.75,
              "no {0} MoE kernel of this vLLM build supports this GPU and configuration", kind="moe_backend",
              unsure=("cuda_arch_or_driver",), any_level=True),
    CrashRule("moe_backend_value", "bad_argument",
              _r(r"\bmoe_backend='?([\w.-]{1,40})'? is not supported for (\w{2,20}) MoE\. Expected one of"), 84, 0.85,
              "moe_backend '{0}' is not one the {1} MoE path offers", kind="moe_backend_value", any_level=True),
    # The V1 engine class chosen while the environment says V0 (vllm/engine/async_llm_engine.py: "Using V1
    # AsyncLLMEngine, but envs.VLLM_USE_V1=False. This should not happen. As a workaround, try using
    # AsyncLLMEngine.from_vllm_config(...) or explicitly set VLLM_USE_V1=0 or 1", rllm-org/rllm#262): the
    # launcher's environment setting, not the model.
    CrashRule("v1_env_mismatch", "bad_argument",
              _r(r"Using V1 \w{0,30}Engine, but envs\.VLLM_USE_V1=False"), 80, 0.8,
              "the V1 engine was built while the environment says VLLM_USE_V1=False: the launcher's environment and "
              "the engine class disagree", kind="v1_env", any_level=True),
    # The multimodal budget with chunked MM input off (vllm/v1/core/encoder_cache_manager.py
    # compute_mm_encoder_budget; --disable-chunked-mm-input, which vLLM forces for bidirectional multimodal attention):
    # "Chunked MM input disabled but max_tokens_per_mm_item (2496) is larger than max_num_batched_tokens (512). Please
    # increase max_num_batched_tokens." (decoderesearch/interp-engine#2, Gemma 3 with --max-num-batched-tokens 512).
    CrashRule("mm_item_over_batch_budget", "bad_argument",
              _r(r"max_tokens_per_mm_item \((\d{1,9})\) is larger\s{0,3}"
                 r"(?:than max_num_batched_tokens \((\d{1,9})\))?"),
              80, 0.8, "one multimodal item needs {0} tokens, more than --max-num-batched-tokens allows{1}",
              kind="mm_budget", any_level=True),
    CrashRule("kv_zero_blocks", "kv_cache_insufficient",
              _r(r"# (?:[GNX]PU|gpu|npu) blocks: 0\b|\b[GNX]PU KV cache size: 0 tokens"), 72, 0.75,
              "the memory profile left room for no KV cache block at all (weights and activations took what "
              "--gpu-memory-utilization allows)", any_level=True),
    # A model class that supports only some versions of its family (vllm/model_executor/models/minicpmv.py:
    # "Currently, MiniCPMV only supports versions 2.0, 2.5, 2.6, 4.0. Got version: (4, 5)"): this vLLM predates the
    # checkpoint's version.
    # vllm/config (ModelConfig): "`limit_mm_per_prompt` is only supported for multimodal models." when the checkpoint
    # is a multimodal one (the user passed the flag for its images): this release does not register its architecture
    # as multimodal (vllm-project/vllm#14949 Phi-4-multimodal, zai-org/GLM-V#9 GLM-4.1V on release day,
    # MoonshotAI/Kimi-VL#15 on 0.8.4); the flag is the alternative, for a text-only model.
    # A model runner that allocates one KV-cache group only, meeting a hybrid model (gpt-oss's sliding-window and
    # full attention, Qwen3-Next's linear attention): vLLM's hardware runners (TPU, Tenstorrent) and plugins that patch
    # initialize_kv_cache (kvcached) raise "NotImplementedError: Hybrid models with more than one KV cache type are not
    # supported yet." (ovg-project/kvcached#187).
    CrashRule("hybrid_kv_unsupported", "unsupported_architecture",
              _r(r"Hybrid models with more than one KV cache type are not supported"), 78, 0.75,
              "the model runner in use does not support a hybrid model (its layers need more than one KV-cache type)",
              kind="hybrid_kv", unsure=("other",)),
    CrashRule("not_registered_multimodal", "unsupported_architecture",
              _r(r"`?limit_mm_per_prompt`? is only supported for multimodal models"), 76, 0.65,
              "this vLLM does not know the model as a multimodal architecture (it refused --limit-mm-per-prompt)",
              kind="not_multimodal", unsure=("bad_argument",), any_level=True),
    CrashRule("model_version_unsupported", "unsupported_architecture",
              _r(r"\b(\w{2,40}) only supports versions? \d[\d., and]{0,80}"), 74, 0.75,
              "this engine version's {0} implementation does not support the checkpoint's model version"),
    CrashRule("mrv2_speculative", "speculative_config_invalid",
              _r(r"(?:VLLM_USE_V2_MODEL_RUNNER|Model ?Runner ?V2|MRV2) does not (?:yet )?support:? ([^\n\[]{0,80}"
                 r"(?:speculat|eagle|mtp|ngram|draft|medusa)[^\n\[]{0,60})"),
              80, 0.85, "vLLM's Model Runner V2 does not yet support this speculative decoding ({0}): run without "
              "VLLM_USE_V2_MODEL_RUNNER=1 or with another drafter"),
    # Its kernel chooser for quantized linear layers (vllm/model_executor/layers/quantization/kernels/
    # mixed_precision/__init__.py choose_mp_linear_kernel, scaled_mm/ likewise): "Failed to find a kernel that can
    # implement the WNA16 linear layer. Reasons: ... MarlinLinearKernel requires capability 80, current compute
    # capability is 75" (vllm-project/vllm#30602): no kernel of this quantization runs on this GPU.
    CrashRule("quant_kernel_none", "quantization_unsupported",
              _r(r"Failed to find a kernel that can implement the ([\w ]{1,40}) linear layer"), 80, 0.85,
              "no kernel of this vLLM runs the checkpoint's {0} quantization on this GPU (each needs a newer compute "
              "capability)", kind="gpu"),
    CrashRule("mrv2_unsupported", "bad_argument",
              _r(r"(?:VLLM_USE_V2_MODEL_RUNNER|Model ?Runner ?V2|MRV2) does not yet support:? ([^\n\[]{1,120})"
                 r"|Model Runner V2 requires (\w{1,40})"),
              78, 0.85, "vLLM's Model Runner V2 does not yet support {0}{1}: run without VLLM_USE_V2_MODEL_RUNNER=1",
              kind="v1_feature"),
    CrashRule("v1_feature", "bad_argument",
              _r(r"VLLM_USE_V1=1 is not supported with ([^\n]{1,120})|\b" + _NOT_SUPPORTED + _NEW_RUNNER),
              70, 0.75, "the engine's newer runner (vLLM V1) does not support a requested feature ({0})",
              kind="v1_feature", exclude=_FALLING_BACK),
    # ------------------------------------------------------------------ its drafter
    # vllm/engine/arg_utils.py (vllm-project/vllm#22935): V1 cannot skip speculation for prompts longer than the draft
    # model's own context, so it refuses a deployment max_model_len above the drafter's (a standard EAGLE head: 2048).
    CrashRule("draft_context_too_short", "speculative_config_invalid",
              _r(r"draft model config's max_model_len \((\d{1,9})\) is less than the deployment's max_model_len "
                 r"\((\d{1,9})\)"), 80, 0.85,
              "the drafter handles at most {0} tokens of context, less than the deployment's max_model_len ({1}): "
              "lower --max-model-len to {0} or use a drafter trained for longer context"),
    # ------------------------------------------------------------------ its GPU count
    # vllm/executor/ray_utils.py initialize_ray_cluster: the parallel sizes ask for more GPUs than Ray sees; raised
    # as "... in the cluster." (older releases), logged as a warning "... in the placement group." before it waits.
    CrashRule("gpus_exceed_available", "bad_argument",
              _r(r"The number of required GPUs exceeds the total number of available GPUs in the (?:cluster|placement "
                 r"group)"), 74, 0.8,
              "the tensor/pipeline-parallel sizes ask for more GPUs than the engine can see", kind="gpu_count"),
    # The attention backend a launch selected refusing the configuration (vllm/platforms/cuda.py get_attn_backend_cls:
    # "Selected backend {backend} is not valid for this configuration. Reason: {invalid_reasons}";
    # vllm-project/flash-attention#2336: FLASHINFER and attention sinks): the backend choice is the setting to change.
    CrashRule("attention_backend_invalid", "bad_argument",
              _r(r"Selected backend (?:AttentionBackendEnum\.|_Backend\.)?(\w{1,60}) is not valid for this "
                 r"configuration\.?(?: Reason: ([^\n]{1,200}))?"), 76, 0.75,
              "the attention backend this launch selected ({0}) cannot run this model or GPU: {1}",
              kind="attention_backend", unsure=("cuda_arch_or_driver",)),
    # ------------------------------------------------------------------ its model registry and fallback class
    CrashRule("architecture_inspection_failed", "unsupported_architecture",
              # (one architecture or a list: "['Qwen3ForCausalLM', 'TransformersForCausalLM'] failed to be inspected")
              _r(r"Model architectures? \[?'?([\w.]{1,120}(?:'?, '?[\w.]{1,120}){0,7})'?\]? failed to be inspected"
                 r"|Error in inspecting model architecture '([\w.]{1,120})'"),
              62, 0.75, "vLLM could not load its implementation of {0}{1} (the architecture failed to be inspected)",
              kind="inspect", unsure=("missing_dependency",)),
    # The inspection subprocess died on an import that had already failed (a compiled extension, a module).
    CrashRule("inspection_after_import_failure", "missing_dependency",
              _r(r"(?:" + _IMPORT_FAILED + r")[^\n]{0,3000}?(?:Error in inspecting model architecture"
                 r"|failed to be inspected)"), 64, 0.75,
              "an import failed (quoted) and the engine's model inspection died of it", kind="module",
              any_level=True),
    CrashRule("inspection_after_import_failure_above", "missing_dependency",
              _r(r"Error in inspecting model architecture|failed to be inspected"), 63, 0.7,
              "an import failed above and the engine's model inspection died of it", kind="module",
              context=_r(_IMPORT_FAILED)),
    CrashRule("transformers_fallback_incompatible", "unsupported_architecture",
              _r(r"The Transformers implementation of '?([\w.]{1,120})'? is not compatible with vLLM"
                 r"|\bhas no vLLM implementation|is not supported by the Transformers backend"),
              76, 0.8, "the engine has no native implementation of this architecture ({0}) and its generic "
              "Transformers fallback cannot run it", kind="fallback"),
)
