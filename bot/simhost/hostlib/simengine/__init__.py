"""Shared runtime of the simulated engines (standard library only; runs on the simulated host)."""
