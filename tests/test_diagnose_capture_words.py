"""An error whose message says it struck during graph capture is the capture, wherever it was raised.

The capture area needs the capture phase (a place in the capture code alone is a hint: the same files replay graphs
while serving). A message that names the phase is as good as the phase's milestone: CUDA's runtime strings for
cudaErrorStreamCaptureUnsupported ("operation not permitted when stream is capturing") and for an invalidated capture
("operation failed due to a previous error during capture"), torch_npu's ACL graph ("Cannot run aclop operators during
NPU graph capture", vllm-project/vllm-ascend#3927). The frames below are a model's forward, no capture function.
"""

from __future__ import annotations

import pytest

from bot.diagnose import diagnose

_FRAMES = [
    "Traceback (most recent call last):",
    '  File "/opt/venv/lib/python3.11/site-packages/vllm/model_executor/models/qwen3.py", line 211, in forward',
    "    hidden_states = self.mlp(hidden_states)",
    '  File "/opt/venv/lib/python3.11/site-packages/vllm/model_executor/layers/activation.py", line 98, in forward',
    "    return self.op(x)",
]


@pytest.mark.parametrize("message", [
    "RuntimeError: CUDA error: operation not permitted when stream is capturing",
    "RuntimeError: CUDA error: operation failed due to a previous error during capture",
    "RuntimeError: Cannot run aclop operators during NPU graph capture. Current working aclop is MatMul.",
])
def test_a_message_that_names_the_capture_is_the_capture(message: str) -> None:
    diagnosis = diagnose("\n".join([*_FRAMES, message]) + "\n", exit_code=1)
    assert diagnosis.category == "cuda_graph_oom", diagnosis
    assert any("--enforce-eager" in step or "--disable-cuda-graph" in step for step in diagnosis.next_steps)


def test_the_same_frames_without_those_words_are_not_the_capture() -> None:
    message = "RuntimeError: CUDA error: operation not supported on this device"
    assert diagnose("\n".join([*_FRAMES, message]) + "\n", exit_code=1).category != "cuda_graph_oom"


def test_torch_npu_s_graph_capture_failing_is_a_failed_capture() -> None:
    # torch_npu csrc/core/npu/NPUGraph.cpp over CANN's model-RI capture (vllm-project/vllm-ascend#11990's shape)
    log = ("RuntimeError: NPUModelRunner failed, error is capture_begin:../torch_npu/csrc/core/npu/NPUGraph.cpp:230 NPU "
           "function error: c10_npu::acl::AclmdlRICaptureBegin(capture_stream_, mode), error code is 207005\n")
    assert diagnose(log, exit_code=1).category == "cuda_graph_oom"
