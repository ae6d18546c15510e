"""Answer an engine's device queries with a simulated GPU's figures on a CPU-only machine (torch CPU build).

Only queries are answered (what GPU, how much memory, which compute capability, which triton backend); nothing runs
on a device. Used inside the throwaway venvs of tools/capture_engine_help.py and tools/engine_check.py.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import types
from dataclasses import dataclass
from typing import Any

MIB = 1024**2


@dataclass(frozen=True)
class SimGpu:
    name: str
    memory_mib: int
    capability: tuple[int, int]
    count: int = 1
    sm_count: int = 132


#: The GPU kinds of the engine check (memory as nvidia-smi reports those cards).
GPUS: dict[str, SimGpu] = {
    "24": SimGpu("NVIDIA GeForce RTX 4090", 24564, (8, 9), sm_count=128),
    "48": SimGpu("NVIDIA RTX A6000", 49140, (8, 6), sm_count=84),
    "80": SimGpu("NVIDIA H100 80GB HBM3", 81559, (9, 0)),
    "141": SimGpu("NVIDIA H200", 143771, (9, 0)),
}


def _properties(gpu: SimGpu) -> Any:
    return types.SimpleNamespace(
        name=gpu.name,
        total_memory=gpu.memory_mib * MIB,
        major=gpu.capability[0],
        minor=gpu.capability[1],
        multi_processor_count=gpu.sm_count,
        gcnArchName="",
        uuid="GPU-00000000-0000-0000-0000-000000000000",
        L2_cache_size=50 * MIB,
        warp_size=32,
        is_integrated=False,
        max_threads_per_multi_processor=2048,
        regs_per_multiprocessor=65536,
        shared_memory_per_block_optin=227 * 1024,
    )


def patch_torch(gpu: SimGpu) -> None:
    import torch

    cuda = torch.cuda
    props = _properties(gpu)
    cuda.is_available = lambda: True
    cuda.device_count = lambda: gpu.count
    cuda.current_device = lambda: 0
    cuda.set_device = lambda *a, **k: None
    cuda.synchronize = lambda *a, **k: None
    cuda.empty_cache = lambda *a, **k: None
    cuda.get_device_name = lambda *a, **k: gpu.name
    cuda.get_device_capability = lambda *a, **k: gpu.capability
    cuda.get_device_properties = lambda *a, **k: props
    cuda.mem_get_info = lambda *a, **k: (gpu.memory_mib * MIB - 500 * MIB, gpu.memory_mib * MIB)
    cuda.memory_allocated = lambda *a, **k: 0
    cuda.memory_reserved = lambda *a, **k: 0
    cuda.is_initialized = lambda: True
    cuda.is_bf16_supported = lambda *a, **k: True
    torch.version.cuda = "12.8"
    torch.version.hip = None


def patch_triton(gpu: SimGpu) -> None:
    try:
        from triton.runtime import driver as driver_config
        from triton.backends.compiler import GPUTarget
    except ImportError:  # triton absent: the stub finder stands in for it
        return
    arch = gpu.capability[0] * 10 + gpu.capability[1]

    class _Driver:
        def get_current_target(self) -> Any:
            return GPUTarget("cuda", arch, 32)

        def get_current_device(self) -> int:
            return 0

        def get_active_torch_device(self) -> Any:
            import torch

            return torch.device("cuda", 0)

        def __getattr__(self, name: str) -> Any:
            raise AttributeError(f"simulated triton driver has no {name}")

    driver_config.set_active(_Driver())


class _FixedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Import these names as these module objects, ahead of whatever is installed."""

    def __init__(self, modules: dict[str, types.ModuleType]) -> None:
        self.modules = modules

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname in self.modules:
            return importlib.machinery.ModuleSpec(fullname, self)
        return None

    def create_module(self, spec: Any) -> types.ModuleType:
        return self.modules[spec.name]

    def exec_module(self, module: types.ModuleType) -> None:
        pass


def fake_pynvml(gpu: SimGpu) -> types.ModuleType:
    """NVML as the engines query it (vLLM picks its CUDA platform through it): count, name, memory, capability."""
    nvml = types.ModuleType("pynvml")

    class NVMLError(Exception):
        pass

    memory = types.SimpleNamespace(total=gpu.memory_mib * MIB, free=gpu.memory_mib * MIB - 500 * MIB, used=500 * MIB)
    functions = {
        "nvmlInit": lambda: None,
        "nvmlShutdown": lambda: None,
        "nvmlDeviceGetCount": lambda: gpu.count,
        "nvmlDeviceGetHandleByIndex": lambda index: index,
        "nvmlDeviceGetName": lambda handle: gpu.name,
        "nvmlDeviceGetMemoryInfo": lambda handle: memory,
        "nvmlDeviceGetCudaComputeCapability": lambda handle: gpu.capability,
        "nvmlDeviceGetUUID": lambda handle: f"GPU-{handle:08d}-0000-0000-0000-000000000000",
        "nvmlSystemGetDriverVersion": lambda: "570.172.08",
        "nvmlDeviceGetP2PStatus": lambda a, b, kind: 0,
        "nvmlDeviceGetTopologyCommonAncestor": lambda a, b: 0,
    }
    for name, function in functions.items():
        setattr(nvml, name, function)
    nvml.NVMLError = NVMLError
    nvml.NVML_P2P_CAPS_INDEX_NVLINK = 2
    nvml.NVML_P2P_STATUS_OK = 0
    return nvml


#: Where vLLM defines its stateless GPU count (the "does the world size fit this node" query of ParallelConfig):
#: it reads torch.cuda._device_count_nvml(), i.e. libnvidia-ml through ctypes, which the fake pynvml above does
#: not reach, and torch.cuda._is_compiled(), which cannot be answered True for all of torch without torch taking
#: CUDA-only import paths. The function is answered with the simulated count where it is defined.
STATELESS_COUNT = ("vllm.utils", "vllm.utils.torch_utils", "vllm.platforms.cuda")
#: Where vLLM reads the host's RAM (psutil's total; vLLM 0.11-0.17 CacheConfig refuses a CPU swap space over 70%
#: of it, and its default is 4 GiB per GPU of the TP group): vllm.utils (0.11), vllm.utils.mem_utils (0.17+).
CPU_MEMORY = ("vllm.utils", "vllm.utils.mem_utils")
#: The simulated hosts' RAM: an 8-GPU server's (the machine running the check has far less, 24 GiB here, and
#: would make vLLM refuse TP 8 for its default swap space of 8 x 4 GiB).
HOST_MEMORY_GIB = 512


class _AnswerAfterImport(importlib.abc.MetaPathFinder):
    """Once one of ``modules`` has executed, replace its device-count function with the simulated answer."""

    def __init__(self, answers: dict[str, tuple[tuple[str, ...], Any]]) -> None:
        self.answers = answers  # function name -> (modules that may define it, the answer)

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        names = {name: answer for name, (modules, answer) in self.answers.items() if fullname in modules}
        if not names:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        real_exec = spec.loader.exec_module

        def exec_module(module: types.ModuleType) -> None:
            real_exec(module)
            for name, answer in names.items():
                if hasattr(module, name):
                    setattr(module, name, answer)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def patch_devices(gpu: SimGpu) -> None:
    import sys

    nvml = fake_pynvml(gpu)
    # vLLM vendors its own copy of NVML bindings (vllm.third_party.pynvml); both names answer the same
    sys.meta_path.insert(0, _FixedModules({"pynvml": nvml, "vllm.third_party.pynvml": nvml}))
    sys.meta_path.insert(0, _AnswerAfterImport({
        "_cuda_device_count_stateless": (STATELESS_COUNT, lambda cuda_visible_devices=None: gpu.count),
        "get_cpu_memory": (CPU_MEMORY, lambda: HOST_MEMORY_GIB << 30),
    }))
    patch_torch(gpu)
    patch_triton(gpu)
