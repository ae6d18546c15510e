"""Engines as plug-ins: base.py (the Engine protocol), registry.py (the set of engines), one package per engine."""
