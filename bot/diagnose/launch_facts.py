"""What the launch itself rules out: a verdict the plan or the given command contradicts is moved to the cause that
fits both (an expert reading the log next to the command does the same).

A weight slice "not divisible" by a kernel's tile or a quantization block at tensor-parallel size 1 is not the split:
one GPU holds the whole weight, so the model's own dimension does not fit the quantized kernel (vLLM's
layers/quantization/utils/marlin_utils.py "Weight input_size_per_partition = 10944 is not divisible by min_thread_k =
128", vllm-project/vllm#9913 on one GPU). Without a plan or command the engine's own echo of its settings in the log
says the size (vLLM's engine config line "tensor_parallel_size=1", SGLang's "server_args=ServerArgs(... tp_size=1"),
as an expert reads it; with none of the three nothing is known, and nothing changes.
"""

from __future__ import annotations

import re

from bot.diagnose.advice.plan_view import PlanView
from bot.diagnose.types import Finding, LogLine

#: The divisibility rules that name a quantized kernel's tile or block (bot/diagnose/rules.py, library_rules.py).
_QUANTIZED_SPLIT_RULES = frozenset({"tile_not_divisible", "block_not_divisible", "quantized_shape_misaligned"})


#: The engines' echo of the tensor-parallel size: vLLM's "with config: ... tensor_parallel_size=2" and its
#: "non-default args: {... 'tensor_parallel_size': 2"; SGLang's "server_args=ServerArgs(... tp_size=2" (0.5.2x: a dict).
_LOGGED_TP = re.compile(r"\btensor_parallel_size'?(?:=|: )(\d{1,3})\b|\btp_size(?:=|': )(\d{1,3})\b")


def logged_tp(lines: list[LogLine]) -> int | None:
    """The tensor-parallel size the engine printed among its settings at start-up, when the tail holds it."""
    for line in lines:
        match = _LOGGED_TP.search(line.text)
        if match:
            return int(next(group for group in match.groups() if group))
    return None


def launch_tp(setup: PlanView, lines: list[LogLine]) -> int | None:
    """The tensor-parallel size of the launch: the plan's, the command's flag, 1 for a command without one, and
    without either the size the engine logged among its settings."""
    if setup.tp is not None:
        return setup.tp
    if not setup.argv:
        return logged_tp(lines)
    value = setup.argv_value("tp")
    if value is None:
        return 1
    return int(value) if value.isdigit() else logged_tp(lines)


def single_gpu_split(finding: Finding, setup: PlanView, lines: list[LogLine]) -> None:
    """In place: a quantized kernel's shape refusal on one GPU is the quantization's, not the tensor-parallel split."""
    if finding.category != "tp_not_divisible" or finding.rule not in _QUANTIZED_SPLIT_RULES:
        return
    if launch_tp(setup, lines) != 1:
        return
    finding.category, finding.kind = "quantization_unsupported", "kernel_shape"
    finding.cause = ("on one GPU (no tensor-parallel split) a weight of this model does not fit the quantized "
                     "kernel's tile / block: this quantization layout is not supported for the model")
    finding.alternatives = ["tp_not_divisible"] + [c for c in finding.alternatives if c not in (
        "tp_not_divisible", "quantization_unsupported")]
    finding.confidence = min(finding.confidence, 0.6)
