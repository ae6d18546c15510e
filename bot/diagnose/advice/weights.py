"""Advice for a checkpoint weight whose shape is not the parameter's the engine built for it (the weight loaders'
shape checks, bot/diagnose/weights_rules.py): the two shapes when the message gives them, and what differs
between a checkpoint and its config that makes them differ."""

from __future__ import annotations

import re

from bot.diagnose.advice.plan_view import PlanView
from bot.diagnose.types import Finding

#: The shapes the loaders print (vllm/sglang model_loader/weight_utils.py default_weight_loader, layers/linear.py).
_SHAPES = re.compile(r"Attempted to load weight \((.{1,120}?)\) into parameter \((.{1,120}?)\)"
                     r"|Tried to load weights of size (.{1,120}?) ?to a parameter of size (.{1,120})")


def _shapes(f: Finding) -> str:
    found = _SHAPES.search(f.decisive.text) if f.decisive is not None else None
    if found is None:
        return ""
    weight, parameter = (found.group(1), found.group(2)) if found.group(1) else (found.group(3), found.group(4))
    return f" (the checkpoint's {weight.strip()}, the parameter's {parameter.strip().rstrip(')')})"


def _split_words(s: PlanView) -> str:
    return f" at TP {s.tp} (each rank holds a 1/{s.tp} slice)" if s.tp and s.tp > 1 else ""


def weight_shape_steps(f: Finding, s: PlanView) -> list[str]:
    return [f"a checkpoint weight does not have the shape the model class built for it{_shapes(f)}{_split_words(s)}: "
            f"a fine-tune that resized the vocabulary or changed the heads keeps the base model's config.json; "
            f"compare its vocab_size, hidden_size, num_attention_heads and num_key_value_heads with the shards' "
            f"tensor shapes (`safetensors` metadata) and correct the config, or re-export the checkpoint",
            "if the checkpoint is quantized, check that its quantization_config (method, bits, group size) is one "
            "this engine supports for this architecture: an unsupported layout fails the same check"]


def quantized_shape_steps(f: Finding, s: PlanView) -> list[str]:
    return [f"a weight of the quantized checkpoint does not have the shape the engine's quantized layer built for "
            f"it{_shapes(f)}{_split_words(s)}: this engine build does not handle the checkpoint's quantization for "
            f"that layer (a format, group size or packing it reads differently, or a layer type it leaves "
            f"unquantized); use a checkpoint quantized with a method the engine lists for this architecture, a "
            f"release that added the format, or the bf16 checkpoint"]
