"""Where a native error says it was raised: CUDA and C++ check macros quote their own source file, the innermost
frame of code no Python traceback shows (bot/diagnose/areas.py places an unknown crash by it)."""

from __future__ import annotations

import re

from bot.diagnose.structure import RaisedException

#: The source file a native error names where it was raised, as CUDA / C++ check macros print it ("Failed: CUDA error
#: /build/DeepEP/csrc/deep_ep.cpp:112 'invalid resource handle'", "Cuda error /workspace/csrc/custom_all_reduce.cuh:1735
#: 'an illegal memory access was encountered'"): the innermost frame of code no Python traceback shows. (One
#: character class, starting only where a run of path characters starts: linear on a megabyte line.)
_NATIVE_SOURCE = re.compile(r"(?<![\w./+-])([\w./+-]{1,300}\.(?:cpp|cc|cxx|cu|cuh|c|h|hpp))[:(]\d{1,6}\b")


#: torch's NCCL watchdog (c10d/ProcessGroupNCCL.cpp) reports the asynchronous CUDA error of any kernel, not its own:
#: "ProcessGroupNCCL.cpp:2057] ... watchdog thread terminated with exception: CUDA error: an illegal memory access"
#: (sgl-project/sglang#22987, a kernel bug).
_REPORTER_SOURCES = re.compile(r"ProcessGroup\w{0,20}\.cpp$")


def native_sources(chain: list[RaisedException], error_lines: list[str]) -> list[str]:
    """The native source files the exceptions' messages and the decisive line say the error was raised in."""
    texts = [exc.message[:2000] for exc in chain] + error_lines[:1]
    return [match.group(1) for text in texts for match in _NATIVE_SOURCE.finditer(text)
            if not _REPORTER_SOURCES.search(match.group(1))]
