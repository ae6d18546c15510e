"""The crash diagnoser: the end of a server log -> Diagnosis (cause, the lines that prove it, next steps, a fix).

types (the values passed between steps) · structure (the tail read as an expert reads it: exceptions, frames,
exits, start-up phases) · rules / signals / structure_rules (what the lines mean, as data) · match (tail -> verdict)
· advice/ (next steps and the fix) · health (the healthy path) · unknown (a crash no rule explains) · render
· runner (off the event loop, under a deadline).
"""

from __future__ import annotations

from bot.diagnose.match import diagnose, diagnose_file
from bot.diagnose.render import diagnosis_text

__all__ = ["diagnose", "diagnose_file", "diagnosis_text"]
