"""The vllm engine package (see planners/engines/base.py for what an engine provides)."""

from .engine import ENGINE

__all__ = ["ENGINE"]
