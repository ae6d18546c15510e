"""ROCm's math libraries without kernels for the GPU's gfx target are the GPU, not a healthy start, even when the tail
goes on after rocBLAS's line; the steps are ROCm's. Written fresh in rocBLAS's own format ("rocBLAS error: Cannot
read <path>/TensileLibrary.dat: <reason> for GPU arch : <gfx>", library/src/tensile_host.cpp) with our own paths.
"""

from __future__ import annotations

import pytest

from bot.diagnose import diagnose

_LOADED = ("(EngineCore_DP0 pid=201) INFO 12-03 09:30:00 [gpu_model_runner.py:3120] Model loading took 7.1 GiB memory "
           "and 4.2 seconds\n")


@pytest.mark.parametrize(("line", "target"), [
    ("rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: No such file or directory for GPU "
     "arch : gfx1103", "gfx1103"),
    ("rocBLAS error: Cannot read /opt/rocm-6.4/lib/rocblas/library/TensileLibrary_lazy_gfx1151.dat: Illegal seek "
     "for GPU arch : gfx1151", "gfx1151"),
])
def test_rocblas_without_the_gpus_kernels_is_the_gpu_with_rocms_steps(line: str, target: str) -> None:
    log = _LOADED + line + "\n(EngineCore_DP0 pid=201) INFO 12-03 09:30:02 [backends.py:548] Using cache directory"
    result = diagnose(log)
    assert result.category == "cuda_arch_or_driver", result
    assert target in result.cause
    steps = " ".join(result.next_steps)
    assert "rocminfo" in steps and "HSA_OVERRIDE_GFX_VERSION" in steps and "CUDA 12.8" not in steps
