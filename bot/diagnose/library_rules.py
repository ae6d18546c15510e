"""Rules for what the libraries and platforms around an engine print when a start fails: Ray's memory monitor, a
platform's start-up timeout (Modal, Kubernetes' startup probe), the Hub clients' download checks, Python's enum,
transformers' GGUF loader, torch's op namespace.

Engines are launched inside these (Ray actors for RL frameworks, the Hub clients for downloads) and their messages
reach the engine's log unchanged, so they are engine-neutral. Sources, each the library's own text:
- Ray's memory monitor (the raylet kills a worker before the kernel's OOM killer does, and points at its docs page
  ray-core/scheduling/ray-oom-prevention: ray-project/ray doc/source/ray-core/scheduling/ray-oom-prevention.rst),
  as in TideDra/lmm-r1#71;
- huggingface_hub's download check (file_download.py: "Consistency check failed: file should be of size X but has
  size Y (name)"), huggingface/huggingface_hub#2779; modelscope's FileIntegrityError ("... integrity check failed,
  expected sha256 signature is ..., the download may be incomplete"), vllm-project/vllm#13962;
- Python's ``enum``: ``ValueError: 'x' is not a valid LoadFormat`` (Lib/enum.py ``EnumType.__call__``) for a setting
  whose values are an enum, as verl passed to SGLang (verl-project/verl#1068);
- transformers' GGUF loader (modeling_gguf_pytorch_utils.py ``load_gguf_checkpoint``): "GGUF model with architecture
  qwen3 is not supported yet." until a newer transformers maps it (sgl-project/sglang#6281, vllm-project/vllm#42229);
- torch's op namespace without an op the engine's compiled extension should have registered: "'_OpNamespace' '_C'
  object has no attribute 'gptq_marlin_repack'" (vllm-project/vllm#19727 on ROCm; vllm-project/vllm#5501 after a
  failed import); which category it is depends on what else the tail says (``bot/diagnose/ops.py``).
- vLLM's Ray executor with no free GPU on its node (vllm/executor/ray_utils.py initialize_ray_cluster).
Patterns are linear-time: bounded gaps, no nested quantifiers.
"""

from __future__ import annotations

from bot.diagnose.types import Rule, r

LIBRARY_RULES: tuple[Rule, ...] = (
    # vLLM's Ray executor finding no free GPU on its own node (vllm/executor/ray_utils.py initialize_ray_cluster:
    # "Current node has no GPU available. current_node_resource={...}"): the GPUs exist but Ray has them reserved, by
    # a placement group a failed run left behind, or by the actor that runs the engine having been given fewer GPUs
    # than the tensor-parallel size (the second model deployed on one Ray node, vllm-project/vllm#12929-style
    # threads; verl / prime-rl launchers work around it with the mp executor).
    Rule("ray_gpus_reserved", "other",
         r(r"\bCurrent node has no GPU available\b"), 74, 0.7,
         "vLLM's Ray executor found no free GPU on its node: Ray holds the GPUs for another placement group or gave "
         "the engine's actor fewer GPUs than it needs", kind="ray_gpus_reserved", any_level=True),
    # A platform's own start-up allowance running out (Modal: "Runner failed with exception: Runner has been
    # initializing for too long: 300 seconds", modal-labs/modal-examples#1154; Kubernetes' kubelet: "Container ...
    # failed startup probe, will be restarted"): the taxonomy's time limit, set by the platform instead of Slurm.
    Rule("platform_startup_timeout", "time_limit",
         r(r"\bhas been initializing for too long\b|\bfailed startup probe, will be restarted\b"), 78, 0.7,
         "the platform running the engine stopped it: its start-up took longer than the platform allows",
         kind="startup_timeout", unsure=("other",), any_level=True),
    Rule("ray_memory_monitor", "host_oom_killed",
         r(r"ray-oom-prevention|Task was killed due to the node running low on memory|ray\.exceptions\."
           r"OutOfMemoryError|which exceeds the memory usage threshold of"), 74, 0.8,
         "Ray's memory monitor killed the engine's worker: the host's RAM ran out", any_level=True),
    Rule("download_incomplete", "model_files_missing_or_corrupt",
         r(r"Consistency check failed: file should be of size \d{1,20} but has size \d{1,20}(?: \(([^)\n]{1,200})\))?"
           r"|FileIntegrityError|integrity check failed|the download may be incomplete"), 76, 0.8,
         "a downloaded model file is incomplete or corrupt (its size or checksum does not match) ({0})", kind="corrupt",
         any_level=True),
    # A file the tokenizer or loader looks for by pattern is not in the folder (vLLM's Mistral tokenizer mode:
    # "Found 0 files matching the pattern: `^tokenizer\.model\.v.*$|^tekken\.json$`", vllm-project/vllm#8995).
    Rule("no_file_matches", "model_files_missing_or_corrupt",
         r(r"\bFound 0 files matching the pattern\b"), 72, 0.75,
         "the model folder lacks a file the loader looks for by name pattern (a tokenizer or weight file)",
         kind="path"),
    # ModelScope's hub answering that the repo has no such revision ("The model: Qwen/X has no revision: main !",
    # modelscope hub/api.py; vllm-project/vllm-ascend#829): the hub lookup failed.
    Rule("hub_revision_missing", "hub_access",
         r(r"\bThe model: [\w./-]{1,200} has no revision\b"), 72, 0.75,
         "the model hub has no such revision of this repo (or the lookup was refused)", any_level=True),
    # ModelScope's hub client raising one of its own errors (modelscope/hub/errors.py: NotExistError, RequestError,
    # NotLoginException, NoValidRevisionError, FileDownloadError, GitError, InvalidParameter, NotSupportError; its
    # FileIntegrityError is a corrupt download, above): the hub lookup or download failed, as huggingface_hub's own
    # errors say for the Hugging Face Hub.
    Rule("modelscope_hub_error", "hub_access",
         r(r"\bmodelscope\.hub\.errors\.(?!FileIntegrityError)(\w{1,60})"), 72, 0.8,
         "ModelScope's hub refused or failed the model's lookup or download ({0})", kind="modelscope", any_level=True),
    # ModelScope's handle_http_response (modelscope/hub/errors.py) logging a refused lookup without a login before it
    # re-raises the HTTPError: "Authentication token does not exist, failed to access model X which may not exist or
    # may be private. Please login first." With VLLM_USE_MODELSCOPE on, a local path that does not exist is looked up
    # there too (vllm-project/vllm#2329).
    Rule("modelscope_not_logged_in", "hub_access",
         r(r"\bAuthentication token does not exist, failed to access model ([^\s]{1,200})"), 72, 0.8,
         "ModelScope refused the lookup of {0} without a login (a private repo, or a name or local path that does "
         "not exist)", kind="modelscope_login", any_level=True),
    Rule("enum_value_invalid", "bad_argument",
         r(r"'([^'\n]{1,80})' is not a valid ([A-Z][A-Za-z0-9]{1,60})\b"), 64, 0.7,
         "'{0}' is not one of the values {1} accepts: a setting was given a value this engine version does not know",
         kind="value"),
    # The GGUF format for an architecture the loader does not map: the model's quantized (GGUF) form is what is not
    # supported (vLLM serves most such models from safetensors; the dev collections file it under the quantization 3
    # times in 5, the others under transformers and the architecture), so both are the alternatives.
    Rule("gguf_architecture_unknown", "quantization_unsupported",
         r(r"GGUF model with architecture ([\w.-]{1,60}) is not supported yet"), 76, 0.65,
         "a GGUF file of architecture {0} cannot be loaded: the installed transformers' GGUF loader does not map that "
         "architecture", kind="gguf", unsure=("transformers_too_old", "unsupported_architecture")),
    # A launcher that embeds Python (ai-dynamo/dynamo's dynamo-run, a Rust binary) and could not import the engine:
    # "Failed to import python 'vllm' module. Are we running in the correct venv?" (ai-dynamo/dynamo#441).
    Rule("engine_package_unimportable", "missing_dependency",
         r(r"Failed to import python '([\w.]{1,80})' module"), 72, 0.8,
         "the launcher could not import the engine's Python package '{0}' (a broken or mismatched install, or the "
         "wrong virtualenv)", kind="module", any_level=True),
    # vLLM's V0 worker naming the method that failed; the KV-cache setup (the cache blocks' check or their
    # allocation) is all initialize_cache does, when the tail lost the error itself (OpenRLHF/OpenRLHF#336).
    Rule("kv_setup_method_failed", "kv_cache_insufficient",
         r(r"Error executing method '?(initialize_cache|determine_num_available_blocks)\b"), 26, 0.45,
         "the worker failed in {0}, the KV-cache setup; its own error is not in this tail",
         unsure=("gpu_oom_weights",)),
    # The quantized kernels' shape checks, in code both engines share (vLLM's layers/quantization/utils/marlin_utils.py,
    # which SGLang's layers/quantization/marlin_utils.py copies): "Weight output_size_per_partition = 1376 is not
    # divisible by min_thread_n = 64. Consider reducing tensor_parallel_size or running with --quantization gptq."
    Rule("tile_not_divisible", "tp_not_divisible",
         r(r"is not divisible by (?:min_thread_[kn]|group_size|tile_size|block_size)\b|Consider reducing "
           r"tensor_parallel_size"), 80, 0.85,
         "at this TP a weight slice is not a multiple of the kernel's tile / group size", kind="block"),
    # An attention backend refusing the KV cache's dtype: an FP8 KV cache (--kv-cache-dtype fp8, stored as uint8)
    # its kernels do not take ("MLA kv_data_type torch.uint8 is not supported. Supported dtypes: [torch.bfloat16,
    # torch.float16]", vllm-project/vllm#57713; "kv_cache_dtype fp8_e5m2 is not supported by the FlashAttention
    # backend").
    Rule("kv_cache_dtype_unsupported", "quantization_unsupported",
         r(r"\bkv[_ ](?:cache[_ ])?(?:data[_ ]type|dtype):? '?([\w.]{1,40})'? (?:is )?(?:not supported|unsupported)\b"
           # (an attention backend's own refusal in its own words: "FlashAttention V1 with FP8 KV cache not yet
           # supported", vllm v1/attention/backends/flash_attn.py, vllm-project/vllm#14221, cut at "no" there)
           r"|\bwith (?:an? )?(FP8|fp8|quantized) KV[ _-]?cache (?:is )?(?:not|no$)"),
         72,
         0.7, "the attention backend does not take this KV-cache dtype ({0})", kind="kv_dtype",
         unsure=("bad_argument",)),
    # NumPy 2.0's own notices for what it removed (numpy/_expired_attrs_2_0.py: "`float_` was removed in the NumPy
    # 2.0 release. Use `np.float64` instead."; the ndarray methods: "`newbyteorder` was removed from the ndarray
    # class in NumPy 2.0. Use ..."): a package written for NumPy 1 (gguf's reader, vllm-project/vllm#16134) under
    # NumPy 2.
    Rule("numpy2_removed", "missing_dependency",
         r(r"`([\w.]{1,60})` was removed (?:from the ndarray class )?in (?:the )?NumPy 2\.0\b"), 70, 0.75,
         "a package written for NumPy 1.x calls {0}, which NumPy 2.0 removed: the installed NumPy is newer than "
         "that package supports", kind="numpy2"),
    # A C++ check (TORCH_CHECK) inside a quantized GEMM op failing on its inputs' types ("Expected a.dtype() ==
    # torch::kInt8 to be true, but got false at torch.ops.C.cutlass_scaled_mm", vllm-project/vllm#25935: Blackwell's
    # CUTLASS scaled_mm has no INT8 path): the checkpoint's quantization is not what this GPU's kernel takes.
    Rule("quantized_op_check_failed", "quantization_unsupported",
         r(r"Expected [^\n]{1,200}? to be true, but got false\b[^\n]{0,300}?\b(\w{0,20}(?:scaled_mm|marlin|gptq|awq"
           r"|machete|fp8|fp4|int8|int4|w8a8)\w{0,20})\b"), 60, 0.55,
         "the quantized kernel {0} refused its inputs: this checkpoint's quantization is not one its build for this "
         "GPU takes", kind="gemm_arch", unsure=("other",)),
    Rule("extension_op_missing", "missing_dependency",
         r(r"_OpNamespace'? '?[\w.]{1,80}'? object has no attribute '(\w{1,80})'|No such operator ([\w:]{1,120})"),
         62, 0.6, "the engine's compiled extension has no op {0}{1}: a build for another platform, torch or CUDA",
         kind="binary", any_level=True),
)
