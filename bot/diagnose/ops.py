"""Where an op missing from the engine's compiled extension came from.

torch raises "'_OpNamespace' '_C' object has no attribute 'X'" when the engine calls an op its extension never
registered. Which category that is depends on the rest of the tail, the way an expert reads it:
- the extension warned earlier that it failed to import (vLLM's "Failed to import from vllm._C with ImportError(...
  libcudart.so.12: cannot open shared object file ...)", vllm-project/vllm#5501): that import is the cause, a missing
  library or a binary built against another torch / CUDA: ``missing_dependency``, quoting the import first;
- else the op is a quantization kernel (marlin, gptq, awq, fp8 scaled-mm, machete, ...) the extension was built
  without, as on a ROCm or CPU build (vllm-project/vllm#19727: 'gptq_marlin_repack' on MI300X): the checkpoint's
  quantization is not supported on this platform: ``quantization_unsupported``;
- else the extension is from another build than the Python code calling it: ``missing_dependency``.

The same holds for vLLM finding no platform: with no GPU visible it says "No platform detected, vLLM is running on
UnspecifiedPlatform" (a driver or container matter, ``cuda_arch_or_driver``), but when the tail also shows the CUDA
runtime library of the engine's own wheels missing ("libcudart.so.12: cannot open shared object file"), the install
is the cause: a CUDA build without its runtime package, or on a host of another vendor (ROCm/legacy-rocm-build#5668).
"""

from __future__ import annotations

import re

from bot.diagnose.types import Finding, LogLine
from bot.diagnose.unknown import BROKEN_EXTENSION

#: Op names of the quantization kernels in vLLM's csrc/quantization and SGLang's sgl-kernel.
_RUNTIME_MISSING = re.compile(r"libcudart\.so[\w.]{0,12}: cannot open shared object file"
                              r"|libcudart[\w.]{0,12} not found")
_QUANT_OP = re.compile(r"marlin|gptq|awq|fp8|fp4|mxfp|nvfp4|int8|int4|w8a8|w4a|scaled_mm|machete|cutlass_scaled"
                       r"|gguf|aqlm|squeezellm|allspark|exllama|bnb|quant", re.IGNORECASE)


def place_missing_op(finding: Finding, lines: list[LogLine]) -> None:
    """Move an ``extension_op_missing`` finding to the category the rest of the tail points at."""
    if finding.rule != "extension_op_missing" or finding.decisive is None or finding.pos < 0:
        return
    warned_pos = next((pos for pos in range(finding.pos - 1, -1, -1) if BROKEN_EXTENSION.search(lines[pos].text)),
                      None)
    op = next((group for group in (finding.match.groups() if finding.match else ()) if group), "")
    if warned_pos is not None:
        finding.support.append(finding.decisive)
        finding.decisive, finding.pos, finding.match = lines[warned_pos], warned_pos, None
        finding.confidence = 0.7
        finding.cause = (f"a compiled extension failed to import (quoted) and the first op called from it ({op}) is "
                         f"missing: a binary built against another torch / CUDA, or a shared library the host lacks")
    elif _QUANT_OP.search(op):
        finding.category, finding.kind, finding.confidence = "quantization_unsupported", "gpu", 0.6
        finding.cause = (f"this build of the engine has no {op} kernel: the checkpoint's quantization is not "
                         f"supported on this GPU / platform build")
        finding.alternatives = ["missing_dependency"]


def place_missing_platform(finding: Finding, lines: list[LogLine]) -> None:
    """vLLM's "no platform" with the CUDA runtime of its own wheels missing: the install, not the driver."""
    if finding.rule != "no_platform":
        return
    runtime = next((line for line in lines if _RUNTIME_MISSING.search(line.text)), None)
    if runtime is None:
        return
    if finding.decisive is not None:
        finding.support.append(finding.decisive)
    finding.decisive, finding.pos, finding.match = runtime, lines.index(runtime), None
    finding.category, finding.kind, finding.confidence = "missing_dependency", "binary", 0.7
    finding.cause = ("the engine's CUDA runtime library (libcudart) is not installed, so no GPU platform could load: "
                     "a CUDA build of the engine without its CUDA packages, or on a host with another GPU vendor")
    finding.alternatives = ["cuda_arch_or_driver"]
