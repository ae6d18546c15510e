"""Make an inference engine importable on a CPU-only machine, far enough to build its argument parser and run its
argument validation: every module that is not installed (CUDA kernels, GPU-only packages, optional extras) is
replaced by a stub, and the device queries answer with a simulated GPU's figures.

Runs inside the throwaway venv of tools/capture_engine_help.py and tools/engine_check.py (stdlib and torch only).
The stubbed module names are recorded, so each capture says what was not real.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any

STUBBED: list[str] = []
COMPILED_OR_SO: set[str] = set()
#: Packages stubbed when they are not installed: CUDA kernels and GPU-only libraries (no CPU build), and the few
#: heavy or notebook-only imports an engine makes at module level. Anything else that is missing stays missing, as
#: libraries probe optional packages with try/except ImportError and must see them absent.
GPU_ONLY = (
    "cuda", "pynvml", "sgl_kernel", "sglang_kernel", "flashinfer",
    "torchcomms", "xgrammar", "deep_gemm", "deep_ep", "mooncake", "nixl", "cutlass", "quack", "tvm_ffi",
    "torch_memory_saver", "IPython", "decord", "vllm_flash_attn", "xformers", "cupy", "llguidance",
    "outlines", "outlines_core", "openai_harmony", "smg_grpc_servicer", "modelscope", "blobfile", "anthropic",
    "depyf", "flash_mla", "aiter", "quark", "modelopt", "torchvision", "torchaudio",
)


class _StubMeta(type):
    """A class whose every attribute is another stub: usable as a base class, decorator, callable or constant."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _StubMeta(name, (_Stub,), {})

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        # used as a decorator (@stub / @stub(...)): hand back the decorated function unchanged
        if len(args) == 1 and not kwargs and (callable(args[0]) or isinstance(args[0], type)):
            return args[0]
        return super().__call__()

    def __iter__(cls):  # noqa: D105
        return iter(())

    def __bool__(cls) -> bool:
        return False

    def __or__(cls, other: Any) -> Any:  # X | None in annotations
        return cls

    __ror__ = __or__

    def __getitem__(cls, item: Any) -> Any:  # Generic[...] style annotations
        return cls


class _Stub(metaclass=_StubMeta):
    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema  # only reached when the engine uses pydantic

        return core_schema.any_schema()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _StubMeta(name, (_Stub,), {})

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _Stub()

    def __bool__(self) -> bool:
        return False


class StubModule(types.ModuleType):
    __version__ = "0.0.0"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _StubMeta(name, (_Stub,), {})


class _StubLoader(importlib.abc.Loader):
    def __init__(self, compiled: bool = False) -> None:
        self.compiled = compiled

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = StubModule(spec.name)
        module.__path__ = []  # a package, so that stubbed submodules import too
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        STUBBED.append(module.__name__)
        if self.compiled:
            COMPILED_OR_SO.add(module.__name__)
            stub_op_namespaces(module.__name__)


def _in_import_statement() -> bool:
    """True inside an ``import`` (importlib's _find_and_load); False for a probe such as importlib.util.find_spec,
    so that libraries asking "is flash_attn available?" hear no, while a module-level import still succeeds."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "_find_and_load" and "importlib" in frame.f_code.co_filename:
            return True
        if frame.f_code.co_name == "find_spec" and frame.f_code.co_filename.endswith("util.py"):
            return False
        frame = frame.f_back
    return False


class StubFinder(importlib.abc.MetaPathFinder):
    """Last on sys.meta_path: consulted only for modules no real finder found."""

    def __init__(self, extra: tuple[str, ...] = ()) -> None:
        self.stubbable = frozenset(GPU_ONLY + extra)

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        top = fullname.split(".")[0]
        if top not in self.stubbable or not _in_import_statement():
            return None
        # a missing submodule of a real package is the package's own optional part (probed with try/except
        # ImportError): leave it missing; only whole packages that are not installed are stubbed
        if top in sys.modules and not isinstance(sys.modules[top], StubModule):
            return None
        if top not in sys.modules and importlib.machinery.PathFinder.find_spec(top) is not None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _StubLoader(), is_package=True)


#: Compiled CUDA extensions inside the engines' own packages: present in the wheel but unloadable without the CUDA
#: runtime (libcudart), so they are stubbed ahead of the real file.
COMPILED_CUDA = (
    "vllm._C", "vllm._moe_C", "vllm._flashmla_C", "vllm._flashmla_extension_C", "vllm.cumem_allocator",
    "vllm._rocm_C", "vllm.vllm_flash_attn._vllm_fa2_C", "vllm.vllm_flash_attn._vllm_fa3_C",
)


ENGINE_PACKAGES = ("vllm", "sglang")
#: The torch operator namespaces a compiled extension registers when it loads (vLLM csrc/torch_bindings.cpp:
#: TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ...) and its _cache_ops / _cuda_utils / _custom_ar / _utils
#: fragments; the stable-ABI library adds to ``_C``). Other extensions register under their own module name.
_C_NAMESPACES = ("_C", "_C_cache_ops", "_C_cuda_utils", "_C_custom_ar", "_C_utils")


class _StubOpNamespace:
    """Stands in for ``torch.ops.<namespace>`` of a stubbed compiled extension: every operator is a _StubOp."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        STUBBED.append(f"torch.ops.{self.namespace}")
        return _StubOp(f"{self.namespace}::{name}")


class _StubOp:
    """An operator of a stubbed compiled extension: its overloads (``.default``) are stubs too, and calling it
    answers False. Only capability queries are called while arguments are validated (``cutlass_scaled_mm_supports_
    fp8(capability)`` and the like); False is the honest answer, as the kernel is not there."""

    def __init__(self, qualname: str) -> None:
        self.qualname = qualname

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _StubOp(f"{self.qualname}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> bool:
        return False


def stub_op_namespaces(module_name: str) -> None:
    """Give torch.ops the operator namespaces that the (stubbed) compiled extension ``module_name`` would register."""
    if module_name.split(".")[0] not in ENGINE_PACKAGES or "torch" not in sys.modules:
        return
    import torch

    last = module_name.rsplit(".", 1)[-1]
    for namespace in _C_NAMESPACES if last.startswith("_C") else (last,):
        if not isinstance(getattr(torch.ops, namespace, None), _StubOpNamespace):
            setattr(torch.ops, namespace, _StubOpNamespace(namespace))


class CompiledStubFinder(importlib.abc.MetaPathFinder):
    """First on sys.meta_path: the compiled extensions above and any other ``.so`` inside the engine packages."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname in COMPILED_CUDA:
            return importlib.machinery.ModuleSpec(fullname, _StubLoader(compiled=True), is_package=True)
        if fullname.split(".")[0] in ENGINE_PACKAGES and path:
            real = importlib.machinery.PathFinder.find_spec(fullname, path)
            if real is not None and (real.origin or "").endswith(".so"):
                return importlib.machinery.ModuleSpec(fullname, _StubLoader(compiled=True), is_package=True)
        return None


#: Operator namespaces that the stubbed kernel packages register in torch when they load (sgl_kernel's .so defines
#: torch.ops.sgl_kernel.*). Engines attach fake (meta) implementations to those operators at import time, e.g.
#: sglang 0.5.9 srt/layers/quantization/fp8_kernel.py: ``@torch.library.register_fake("sgl_kernel::...")``.
STUBBED_OP_NAMESPACES = ("sgl_kernel",)


def tolerate_fake_kernels_for_stubbed_ops() -> None:
    """A fake (meta) implementation for an operator of a stubbed kernel package or compiled extension (vLLM's
    _custom_ops.py: ``@register_fake("_C::gptq_gemm")``) is kept as a plain function: the operator does not exist
    here (its library is a stub), and the fake only serves torch.compile tracing of a kernel
    that never runs in argument validation. Every other registration goes to torch unchanged."""
    import torch

    real_register_fake = torch.library.register_fake

    def register_fake(op: Any, *args: Any, **kwargs: Any) -> Any:
        name = op if isinstance(op, str) else ""
        namespace, _, opname = name.partition("::")
        stubbed = isinstance(getattr(torch.ops, namespace, None), _StubOpNamespace) if namespace else False
        if stubbed or (namespace in STUBBED_OP_NAMESPACES and not hasattr(getattr(torch.ops, namespace), opname)):
            STUBBED.append(f"{namespace}.ops")
            func = args[0] if args and callable(args[0]) else kwargs.get("func")
            return func if func is not None else (lambda f: f)
        return real_register_fake(op, *args, **kwargs)

    torch.library.register_fake = register_fake


def install_stubs(extra: tuple[str, ...] = ()) -> None:
    sys.meta_path.insert(0, CompiledStubFinder())
    sys.meta_path.append(StubFinder(extra))
    tolerate_fake_kernels_for_stubbed_ops()


def real_top_level_stubs() -> list[str]:
    """Stubbed packages by top-level name; inside the engines' own packages, the compiled module itself."""
    names = set()
    for name in STUBBED:
        top = name.split(".")[0]
        names.add(name if top in ENGINE_PACKAGES and name in COMPILED_OR_SO else top)
    return sorted(names)
