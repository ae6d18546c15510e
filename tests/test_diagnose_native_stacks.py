"""Stacks printed innermost first, after a fatal signal, read as an expert reads them (written fresh in the formats'
own shapes, not copied from the corpus).

- Python's faulthandler (CPython Python/traceback.c): "Fatal Python error: Segmentation fault", then "Stack (most
  recent call first):" or "Current thread 0x... (most recent call first):" and frames without the comma,
  '  File "x.py", line 77 in capture_begin'.
- UCX's backtrace of a caught signal (openucx src/ucs/debug/debug.c): "==== backtrace (tid:   4597) ====" and frames
  " 1 0x000000000004f03d ncclLaunchPrepare()  /src/enqueue.cc:574".
- gdb's / glibc's "#3  0x00007f3c5f628350 in ncclLaunchPrepare () from /usr/lib/x86_64-linux-gnu/libnccl.so.2".
"""

from __future__ import annotations

from bot.diagnose import diagnose
from bot.diagnose.reading import prepare
from bot.diagnose.structure import parse_structure

_FAULTHANDLER = "\n".join([
    "Fatal Python error: Segmentation fault",
    "",
    "Current thread 0x00007f3c94bd2740 (most recent call first):",
    '  File "/opt/venv/lib/python3.10/site-packages/torch/cuda/graphs.py", line 77 in capture_begin',
    '  File "/opt/venv/lib/python3.10/site-packages/torch/cuda/graphs.py", line 192 in __enter__',
    '  File "/opt/venv/lib/python3.10/site-packages/vllm/worker/model_runner.py", line 1450 in capture',
    '  File "/opt/venv/lib/python3.10/site-packages/vllm/worker/model_runner.py", line 1210 in capture_model',
])


def test_faulthandler_s_stack_is_kept_innermost_last_with_its_functions() -> None:
    frames = parse_structure(prepare(_FAULTHANDLER)).exceptions[-1].frames
    assert [frame.function for frame in frames] == ["capture_model", "capture", "__enter__", "capture_begin"]


def test_a_segfault_inside_the_graph_capture_is_a_failed_capture() -> None:
    assert diagnose(_FAULTHANDLER + "\n", exit_code=139).category == "cuda_graph_oom"


def test_a_segfault_whose_native_backtrace_is_in_nccl_is_nccl_s() -> None:
    log = "\n".join([
        "[node3:412  :0:4597] Caught signal 11 (Segmentation fault: address not mapped to object at address 0x52b0)",
        "==== backtrace (tid:   4597) ====",
        " 0 0x0000000000042520 __sigaction()  ???:0",
        " 1 0x000000000004f03d ncclLaunchPrepare()  /build/nccl/src/enqueue.cc:574",
        " 2 0x0000000000053d4b groupLaunch()  /build/nccl/src/group.cc:129",
        " 3 0x0000000000054f88 ncclGroupEndInternal()  /build/nccl/src/group.cc:418",
    ])
    result = diagnose(log + "\n", exit_code=139)
    assert result.category == "nccl_error", result
    # (the frame that placed it is quoted beside the signal's line)
    assert any("ncclLaunchPrepare()" in line.text for line in result.evidence[1:]), result.evidence


def test_gdb_s_native_frames_are_read_innermost_last() -> None:
    log = "\n".join([
        "#0  0x00007f3c5f628350 in ncclLaunchPrepare () from /usr/lib/x86_64-linux-gnu/libnccl.so.2",
        "#1  0x00007f3c5f62c001 in groupLaunch () from /usr/lib/x86_64-linux-gnu/libnccl.so.2",
    ])
    frames = parse_structure(prepare(log)).exceptions[-1].frames
    assert [frame.function for frame in frames] == ["groupLaunch", "ncclLaunchPrepare"]
    assert frames[-1].path.endswith("libnccl.so.2")


def test_a_segfault_with_no_stack_stays_a_native_crash() -> None:
    result = diagnose("Fatal Python error: Segmentation fault\n", exit_code=139)
    assert result.category == "other" and "native" in result.cause, result
