"""Exception types that print under the names real engines' tracebacks end with (`torch.OutOfMemoryError: ...`),
so a crash of the simulated engine is a genuine Python traceback with the real last line."""

from __future__ import annotations


def _named(module: str, name: str, base: type[BaseException]) -> type[BaseException]:
    cls = type(name, (base,), {})
    cls.__module__ = module  # traceback prints "<module>.<name>: message"
    return cls


OutOfMemoryError = _named("torch", "OutOfMemoryError", RuntimeError)
HFValidationError = _named("huggingface_hub.errors", "HFValidationError", ValueError)
AcceleratorError = _named("torch", "AcceleratorError", RuntimeError)
ValidationError = _named("pydantic_core._pydantic_core", "ValidationError", ValueError)
