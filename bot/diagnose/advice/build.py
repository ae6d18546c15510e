"""Next steps for a JIT kernel build that failed (Triton's launcher, FlashInfer / DeepGEMM / sgl-kernel JIT
modules, torch.compile): name the missing piece (compiler, headers, nvcc, a library the linker cannot find) from
the compiler's and linker's own lines in the tail, and quote the first compiler error when there is one.

The libcuda remedy follows Triton's own driver lookup (third_party/nvidia/backend/driver.py reads
TRITON_LIBCUDA_PATH, else `ldconfig -p`), as the maintainers answered in state-spaces/mamba#123.
"""

from __future__ import annotations

import re

from bot.diagnose.advice.plan_view import PlanView, gpu_words
from bot.diagnose.types import Advice, Finding, LogLine
from bot.models import Fix, PlanOverrides

_COMPILER_ERROR = re.compile(r"(?:\.(?:c|cc|cpp|cu|cuh|h|hpp):\d+:(?:\d+:)? (?:fatal )?error: .{1,200}"
                             r"|\bld(?:\.\w{1,10})?: cannot find \S{1,120}|\berror: .{1,200})")
_MISSING_LIB = re.compile(r"cannot find -l([\w.+-]{1,80})")

_KINDS = {
    "python_dev": "install the Python development headers on the host (apt install python3-dev for the engine's "
                  "Python version): Triton compiles a small C launcher at start",
    "compiler": "install a C compiler on the host (apt install build-essential) or set CC: Triton needs one",
    "nvcc": "install the CUDA toolkit (nvcc) matching the engine's CUDA and set CUDA_HOME: JIT kernels need it",
    "ninja": "clear the JIT cache (~/.cache/flashinfer, ~/.cache/sglang) and relaunch; check that nvcc matches the "
             "GPU architecture and the engine's CUDA version",
    "ptxas": "Triton cannot compile this kernel for this GPU's architecture: upgrade triton / the engine, or avoid "
             "the kernel path (another attention backend or quantization format)",
    "torch_compile": "relaunch without torch.compile (drop --enable-torch-compile / use -O0 in vLLM)",
    "compiler_error": "the kernel's source did not compile with this compiler / CUDA toolkit: match the toolkit to "
                      "the engine's CUDA version (nvcc --version), clear the JIT cache and relaunch",
    "build_hang": "a JIT kernel build hung: a build killed earlier can leave its lock in the JIT cache (~/.cache/"
                  "tvm-ffi, ~/.cache/sglang, ~/.cache/flashinfer) and every later build waits on it; check that no "
                  "other build runs, remove the cache's lock files (or the cache), and relaunch; a first build that "
                  "is only slow needs a longer --watchdog-timeout",
    "ascend_compile": "CANN's compiler could not build an operator: the installed CANN toolkit (ascend-toolkit) does "
                      "not match the torch_npu / vllm-ascend release; install the CANN version that release names, "
                      "clear the operator cache (kernel_meta, ASCEND_CACHE_PATH) and relaunch",
    "hiprtc": "HIP's runtime compiler could not load the HIP runtime (libamdhip64.so) or read the GPU's ISA: check "
              "that the ROCm runtime the engine's torch was built with is installed and on LD_LIBRARY_PATH "
              "(/opt/rocm/lib), that the GPU is visible (rocminfo, HIP_VISIBLE_DEVICES), and that the ROCm version "
              "matches the engine build",
    "build": "a JIT kernel build failed: clear the JIT cache (~/.cache/flashinfer, ~/.cache/triton) and relaunch; "
             "check that nvcc and gcc are installed and match the engine's CUDA version",
}


def _linker_step(lines: list[LogLine]) -> str:
    library = next((m.group(1) for line in lines if (m := _MISSING_LIB.search(line.text))), None)
    if library == "cuda":
        return ("the linker cannot find libcuda.so (the driver's library) while building a kernel launcher: point "
                "Triton at it (export TRITON_LIBCUDA_PATH=/usr/lib/x86_64-linux-gnu, or the folder `ldconfig -p | "
                "grep libcuda` shows; in a container /usr/local/cuda/lib64/stubs) or run `ldconfig`")
    if library:
        return (f"the linker cannot find lib{library}.so while building a JIT kernel: install the package that "
                f"provides it or add its folder to LIBRARY_PATH")
    return "a JIT kernel build failed at the link step: check the libraries named just above the collect2 line"


def first_compiler_error(lines: list[LogLine]) -> str | None:
    """The first compiler or linker error line of the tail (the rest usually follows from it)."""
    return next((m.group(0) for line in lines if not line.code and (m := _COMPILER_ERROR.search(line.text))), None)


def advise_jit(f: Finding, s: PlanView, lines: list[LogLine]) -> Advice:
    steps: list[str] = []
    fix: Fix | None = None
    if f.kind == "linker":
        steps.append(_linker_step(lines))
    else:
        steps.append(_KINDS.get(f.kind or "", _KINDS["build"]))
    error = first_compiler_error(lines)
    if error and f.kind in ("ninja", "compiler_error", "build"):
        steps.append(f"the first compiler error: {error[:200]}")
    gpu = gpu_words(s)
    if gpu and f.kind in ("ptxas", "ninja", "compiler_error"):
        steps.append(f"the GPU is {gpu}")
    if s.engine == "sglang" and any("flashinfer" in line.text for line in lines):
        steps.append("or avoid FlashInfer's JIT kernels: --attention-backend triton")
        fix = Fix(summary="--attention-backend triton (no FlashInfer JIT build)",
                  overrides=PlanOverrides(extra_args=["--attention-backend", "triton"]))
    if f.kind == "torch_compile" and "--enable-torch-compile" in s.argv:
        fix = Fix(summary="drop --enable-torch-compile",
                  overrides=PlanOverrides(remove_args=["--enable-torch-compile"]))
    return steps, fix
