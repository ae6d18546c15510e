"""Which engine versions know which architectures (shared/engines/LAUNCH_FLAGS.md §3), so that launching a model
on a too-old engine fails the way it really does: "Model architectures [...] are not supported for now."
"""

from __future__ import annotations

import re

#: architecture -> engine -> first version that serves it ("0" = as old as anything a host still runs).
FIRST_VERSION: dict[str, dict[str, str]] = {
    "LlamaForCausalLM": {"sglang": "0", "vllm": "0"},
    "MistralForCausalLM": {"sglang": "0", "vllm": "0"},
    "Qwen2ForCausalLM": {"sglang": "0", "vllm": "0"},
    "Qwen3ForCausalLM": {"sglang": "0.4.6", "vllm": "0.8.5"},
    "Qwen3MoeForCausalLM": {"sglang": "0.4.6", "vllm": "0.8.5"},
    "DeepseekV3ForCausalLM": {"sglang": "0.4.1", "vllm": "0.6.6"},
    "Gemma3ForConditionalGeneration": {"sglang": "0.4.4", "vllm": "0.8.0"},
    "Gemma3ForCausalLM": {"sglang": "0.4.4", "vllm": "0.8.0"},
    "Qwen3NextForCausalLM": {"sglang": "0.5.2", "vllm": "0.10.2"},
    "Qwen3_5ForConditionalGeneration": {"sglang": "0.5.9", "vllm": "0.17.0"},
    "Qwen3_5MoeForConditionalGeneration": {"sglang": "0.5.9", "vllm": "0.17.0"},
}


def version_tuple(version: str) -> tuple[int, ...]:
    """ "0.5.10" -> (0, 5, 10); suffixes such as .post1, rc1, +cu128 are ignored."""
    parts = []
    for piece in version.split("+")[0].split("."):
        match = re.match(r"\d+", piece)
        if not match:
            break
        parts.append(int(match.group()))
    return tuple(parts)


def supports(engine: str, version: str, architecture: str) -> bool:
    first = FIRST_VERSION.get(architecture, {}).get(engine)
    return first is not None and version_tuple(version) >= version_tuple(first)


def supported_architectures(engine: str, version: str) -> list[str]:
    return [arch for arch in FIRST_VERSION if supports(engine, version, arch)]
