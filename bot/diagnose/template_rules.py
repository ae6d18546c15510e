"""Rules for the chat template an engine loads at start: a --chat-template value it cannot resolve, and a model whose
tokenizer has none. Both are the launch setting (``bad_argument``): the fix is the --chat-template value.

Sources, each the engine's or library's own text:
- SGLang's chat-template loading (a value that is neither in its registry of conversation templates nor an existing
  file): "Chat template {x} is not a built-in template name or a valid chat template file path."
  (sgl-project/sglang#1841, a repo-relative .jinja path);
- vLLM (vllm/entrypoints/chat_utils.py, load_chat_template): "The supplied chat template string ({x}) appears
  path-like, but doesn't exist! Tried: ..." and, older, "The supplied chat template ({x}) looks like a file path, but
  it failed to be opened." (vllm-project/vllm#47600: examples/ exists only in a source checkout);
- transformers (tokenization_utils_base.py): "Cannot use chat template functions because tokenizer.chat_template is
  not set and no template argument was passed!", and since v4.44 "default chat template is no longer allowed, so you
  must provide a chat template if the tokenizer does not define one".
Patterns are linear-time: bounded gaps, no nested quantifiers.
"""

from __future__ import annotations

from bot.diagnose.types import Rule, r

TEMPLATE_RULES: tuple[Rule, ...] = (
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
