"""Rules for the serving features a launch turns on: the chat template an engine loads at start (a --chat-template
value it cannot resolve, a model whose tokenizer has none) and LoRA (an adapter that is not there, one of a higher
rank than the launch allows, a model class without LoRA support). They are the launch setting (``bad_argument``; the
missing adapter is its files), and the fix is that setting's value.

Sources, each the engine's or library's own text:
- SGLang's chat-template loading (a value that is neither in its registry of conversation templates nor an existing
  file): "Chat template {x} is not a built-in template name or a valid chat template file path."
  (sgl-project/sglang#1841, a repo-relative .jinja path);
- vLLM (vllm/entrypoints/chat_utils.py, load_chat_template): "The supplied chat template string ({x}) appears
  path-like, but doesn't exist! Tried: ..." and, older, "The supplied chat template ({x}) looks like a file path, but
  it failed to be opened." (vllm-project/vllm#47600: examples/ exists only in a source checkout);
- transformers (tokenization_utils_base.py): "Cannot use chat template functions because tokenizer.chat_template is
  not set and no template argument was passed!", and since v4.44 "default chat template is no longer allowed, so you
  must provide a chat template if the tokenizer does not define one";
- vLLM's LoRA manager and model loader (vllm/lora/worker_manager.py "No adapter found for /path", vllm/lora "LoRA
  rank 64 is greater than max_lora_rank 16", vllm/model_executor/model_loader "Model X does not support LoRA, but
  LoRA is enabled.").
Patterns are linear-time: bounded gaps, no nested quantifiers.
"""

from __future__ import annotations

from bot.diagnose.types import Rule, r

FEATURE_RULES: tuple[Rule, ...] = (
    # A LoRA adapter that is not where the launch says ("No adapter found for /path", vllm/lora/worker_manager.py).
    Rule("lora_adapter_missing", "model_files_missing_or_corrupt",
         r(r"\bNo adapter found for (\S{1,300})"), 78, 0.8, "no LoRA adapter at {0}", kind="lora_path"),
    # LoRA turned on for an architecture whose model class has no LoRA support in this release (vLLM's
    # "Model GemmaForCausalLM does not support LoRA, but LoRA is enabled. Support for this model may be added in the
    # future.", vllm/model_executor/model_loader; "X does not support LoRA yet.", vllm-project/vllm#18574): the
    # launch's --enable-lora, the model itself serves without it.
    Rule("lora_unsupported_model", "bad_argument",
         r(r"\b(?:Model )?([A-Z]\w{2,80}) does not support LoRA\b"), 79, 0.8,
         "--enable-lora is on, and this release has no LoRA support for {0}", kind="lora_unsupported",
         unsure=("unsupported_architecture",), any_level=True),
    # LoRA adapters larger than the launch allows (vllm/lora: "LoRA rank 64 is greater than max_lora_rank 16").
    Rule("lora_rank_over_max", "bad_argument",
         r(r"\bLoRA rank (\d{1,5}) is greater than max_lora_rank (\d{1,5})"), 80, 0.85,
         "the adapter's LoRA rank {0} is above --max-lora-rank {1}: raise it to at least {0}"),
    Rule("chat_template_unresolved", "bad_argument",
         r(r"\bChat template (\S{1,300}) is not a built-in template name"
           r"|\bsupplied chat template(?: string)? \((\S{1,300})\) (?:appears path-like, but doesn't exist"
           r"|looks like a file path, but it failed to be opened)"), 76, 0.85,
         "the --chat-template value {0}{1} is neither a template the engine knows by name nor a file it can open",
         kind="chat_template_path", any_level=True),
    Rule("chat_template_missing", "bad_argument",
         r(r"\btokenizer\.chat_template is not set and no template argument was passed"
           r"|\bdefault chat template is no longer allowed"), 72, 0.75,
         "the model's tokenizer has no chat template and the launch passed none (--chat-template)",
         kind="chat_template_missing", any_level=True),
)
