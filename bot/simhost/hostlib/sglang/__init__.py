"""Simulated SGLang (deploybot simulated host): same entry point, flags, log lines and endpoints as the real one."""

from sglang.version import __version__

__all__ = ["__version__"]
