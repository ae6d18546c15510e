"""The chat template an engine loads at start (bot/diagnose/feature_rules.py): a --chat-template value it cannot
resolve, and a tokenizer without one, are the launch setting with the value's own steps. Two pasting and registry
wordings ride along: a whole line in single-mark Markdown emphasis, and tpu-inference's "not registered in".

Written fresh in the engines' and transformers' own wordings (SGLang's chat-template loading, vLLM's
entrypoints/chat_utils.py load_chat_template, transformers' tokenization_utils_base.py), with paths of our own.
"""

from __future__ import annotations

import pytest

from bot.diagnose import diagnose


@pytest.mark.parametrize("line", [
    "RuntimeError: Chat template templates/qwen.jinja is not a built-in template name or a valid chat template file "
    "path.",
    "ValueError: The supplied chat template string (examples/tool_chat_template_llama.jinja) appears path-like, but "
    "doesn't exist! Tried: examples/tool_chat_template_llama.jinja and /srv/examples/tool_chat_template_llama.jinja",
    "ValueError: The supplied chat template (./chat.jinja) looks like a file path, but it failed to be opened. "
    "Reason: [Errno 2] No such file or directory: './chat.jinja'",
])
def test_a_chat_template_value_the_engine_cannot_resolve_is_the_flag(line: str) -> None:
    result = diagnose(f"[2026-12-03 09:10:00] {line}", exit_code=1)
    assert result.category == "bad_argument", result
    assert "--chat-template" in result.cause
    assert any("absolute path" in step for step in result.next_steps)


@pytest.mark.parametrize("line", [
    "ValueError: Cannot use chat template functions because tokenizer.chat_template is not set and no template "
    "argument was passed! For information about writing templates, see the documentation.",
    "ValueError: As of transformers v4.44, default chat template is no longer allowed, so you must provide a chat "
    "template if the tokenizer does not define one.",
])
def test_a_tokenizer_without_a_chat_template_asks_for_one(line: str) -> None:
    result = diagnose(line, exit_code=1)
    assert result.category == "bad_argument", result
    assert any("--chat-template" in step and "template file" in step for step in result.next_steps)


@pytest.mark.parametrize("mark", ["_", "*"])
def test_a_line_in_single_mark_emphasis_is_read_without_the_marks(mark: str) -> None:
    line = "ValueError: Model architectures ['FooBarForCausalLM'] are not supported for now."
    assert diagnose(f"{mark}{line}{mark}", exit_code=1).category == "unsupported_architecture"


def test_tpu_inferences_registry_saying_not_registered_is_the_architecture() -> None:
    line = ("UnsupportedArchitectureError: Model architectures ['FooMoeHybridForCausalLM'] not registered in "
            "tpu-inference.")
    result = diagnose(line, exit_code=1, engine="vllm")
    assert result.category == "unsupported_architecture", result
    assert "FooMoeHybridForCausalLM" in result.cause
