"""gloo's transport failures, and tails cut where a paste cut them (under a caret line, inside a line's prefix).

Sources: gloo's TCP transport (github.com/facebookincubator/gloo gloo/transport/tcp/pair.cc "Connection closed by
peer", unbound_buffer.cc "Timed out waiting <n>ms for send operation to complete"), SGLang's capture wrapper
(python/sglang/srt/model_executor/cuda_graph_runner.py: ``raise Exception(f"Capture cuda graph failed: {e}\\n...")``),
CPython 3.11+'s caret lines under a failing call (PEP 657), vLLM's process tags ("(EngineCore_DP0 pid=90)").
"""

from __future__ import annotations

from bot.diagnose import diagnose
from bot.logevents import NormalizedLine, normalize_line

_SGL = "/usr/local/lib/python3.10/dist-packages/sglang/srt"
_CAPTURE = f"""\
[2025-03-02 10:00:01 TP1] Scheduler hit an exception: Traceback (most recent call last):
  File "{_SGL}/model_executor/model_runner.py", line 741, in init_cuda_graphs
    self.cuda_graph_runner = CudaGraphRunner(self)
  File "{_SGL}/model_executor/cuda_graph_runner.py", line 239, in __init__
    raise Exception(
Exception: Capture cuda graph failed: {{inner}}"""


def test_a_capture_that_failed_on_the_ranks_transport_is_the_communication() -> None:
    for inner in ("[../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.0.0.2]:3045",
                  "[/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:133] Timed out waiting 1800000ms "
                  "for send operation to complete"):
        result = diagnose(_CAPTURE.format(inner=inner))
        assert result.category == "nccl_error", (inner, result)
        assert "gloo" in result.evidence[0].text


def test_a_capture_that_ran_out_of_memory_is_still_the_capture() -> None:
    inner = "CUDA out of memory. Tried to allocate 448.00 MiB. GPU 7 has a total capacity of 95.00 GiB"
    assert diagnose(_CAPTURE.format(inner=inner)).category == "cuda_graph_oom"


def test_a_peer_closing_after_its_own_oom_is_the_oom() -> None:
    log = """\
[2025-03-02 10:00:01 TP1] Scheduler hit an exception: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.
[2025-03-02 10:00:02 TP0] Scheduler hit an exception: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.0.0.2]:3045"""
    assert diagnose(log).category != "nccl_error"


def test_a_cut_traceback_quotes_the_failing_call_not_its_carets() -> None:
    log = """\
Traceback (most recent call last):
  File "/usr/local/lib/python3.12/dist-packages/vllm/engine/arg_utils.py", line 970, in create_model_config
    return ModelConfig(
           ^^^^^^^^^^^^
  File "/usr/local/lib/python3.12/dist-packages/vllm/config.py", line 392, in _init_multimodal_config
    if ModelRegistry.is_multimodal_model(architectures):
       ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"""
    result = diagnose(log)
    assert result.category != "none"
    assert "ModelRegistry.is_multimodal_model" in result.evidence[0].text
    assert "^^^" not in result.cause


def test_a_process_tag_with_its_pid_blanked_is_still_peeled() -> None:
    log = """\
(EngineCore pid=...) ERROR [core.py:1136] EngineCore failed to start.
(EngineCore pid=...) ERROR [core.py:1136] Traceback (most recent call last):
(EngineCore pid=...) ERROR [core.py:1136]   File "/x/vllm/v1/engine/core.py", line 80, in __init__
(EngineCore pid=...) ERROR [core.py:1136] ModuleNotFoundError: No module named 'deep_gemm'"""
    result = diagnose(log)
    assert result.category == "missing_dependency"
    assert normalize_line(log.split("\n")[-1]) == NormalizedLine(
        text="ModuleNotFoundError: No module named 'deep_gemm'", level="ERROR", timestamp=None)


def test_a_line_cut_inside_its_prefix_is_not_quoted_as_the_error() -> None:
    log = """\
(VllmWorker rank=0 pid=12144) ERROR 04-30 16:21:27 [multiproc_executor.py:380] Traceback (most recent call last):
(VllmWorker rank=0 pid=12144) ERROR 04-30 16:21:27 [multiproc_executor.py:380]   File "/x/torch/cuda/graphs.py", line 186, in __exit__
(VllmWorker rank=0 pid=12144) ERROR 04-30 16:21:27 [multiproc_executor.py:380]     self.cuda_graph.capture_end()
(VllmWorker rank=0 pid=12144) ERROR 04-30 16"""
    result = diagnose(log)
    assert result.category != "none"
    assert "04-30 16" not in result.cause.split(":")[-1]
