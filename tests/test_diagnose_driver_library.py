"""The NVIDIA driver's own library missing, in the words the engines and the loader print (written fresh, not from
the corpus): vLLM's vllm/_custom_ops.py logs ``logger.warning("Failed to import from vllm._C with %r", e)`` when its
compiled extension does not load, and the loader's reason for a missing driver is "libcuda.so.1: cannot open shared
object file: No such file or directory" (glibc's dlopen error). The extension is not broken: no driver is visible
(a CUDA build in a container without the nvidia runtime, or on AMD GPUs), so the verdict is the driver and the step
never says "upgrade the driver"."""

from __future__ import annotations

import pytest

from bot.diagnose import diagnose

_WARNING = ("WARNING 05-01 09:12:40 [_custom_ops.py:21] Failed to import from vllm._C with "
            "ImportError('{0}: cannot open shared object file: No such file or directory')")
_AFTER = ("INFO 05-01 09:12:44 [config.py:520] This model supports multiple tasks: {'generate'}. Defaulting to "
          "'generate'.\nERROR 05-01 09:12:49 [worker_base.py:620] Error executing method 'init_device'. This might "
          "cause deadlock in distributed execution.\nERROR 05-01 09:12:49 [worker_base.py:620] Traceback (most "
          "recent call last):")


@pytest.mark.parametrize("library", ["libcuda.so.1", "libnvidia-ml.so.1"])
def test_a_compiled_extension_without_the_driver_s_library_is_the_driver(library: str) -> None:
    log = _WARNING.format(library) + "\n" + _AFTER
    result = diagnose(log, exit_code=1)
    assert result.category == "cuda_arch_or_driver"
    assert "missing_dependency" in result.alternatives
    assert library in result.cause
    assert result.evidence and "Failed to import from vllm._C" in result.evidence[0].text
    assert any(library in step and "nvidia-smi" in step for step in result.next_steps)
    assert not any("older than" in step for step in result.next_steps)


def test_the_driver_s_library_in_an_import_error_gets_the_missing_driver_step() -> None:
    result = diagnose("ImportError: libcuda.so.1: cannot open shared object file: No such file or directory",
                      exit_code=1)
    assert result.category == "cuda_arch_or_driver"
    assert any("libcuda.so.1" in step and "--gpus all" in step for step in result.next_steps)
    assert not any("upgrade the NVIDIA driver" in step for step in result.next_steps)


def test_another_library_in_the_same_warning_is_not_read_as_the_driver() -> None:
    # libcudart belongs to the CUDA runtime a wheel ships (nvidia-cuda-runtime), not to the driver.
    log = _WARNING.format("libcudart.so.12") + "\n" + _AFTER
    result = diagnose(log, exit_code=1)
    assert result.category != "cuda_arch_or_driver"
    assert "libcudart.so.12" in result.cause


def test_the_same_warning_on_another_platform_is_not_the_driver() -> None:
    # vLLM on a CPU or NPU host prints the warning harmlessly (it has no CUDA driver to find, by design).
    log = ("INFO 05-01 09:12:39 [__init__.py:244] Automatically detected platform cpu.\n"
           + _WARNING.format("libcuda.so.1") + "\n" + _AFTER)
    result = diagnose(log, exit_code=1)
    assert result.category != "cuda_arch_or_driver"
