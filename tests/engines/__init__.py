"""Per-engine test fixtures (healthy logs, crash lines, help texts) and scratch engines for the contract test."""
