"""Simulated vLLM (deploybot simulated host): same entry points, flags, log lines and endpoints as the real one."""

from vllm.version import __version__

__all__ = ["__version__"]
