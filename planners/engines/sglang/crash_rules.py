"""Crash rules only sglang produces, as data (planners.engines.base.CrashRule); the diagnoser adds them to its own.

Empty until the diagnoser's engine-specific rules move here (bot/diagnose_rules*.py hold them today)."""

from __future__ import annotations

from ..base import CrashRule

RULES: tuple[CrashRule, ...] = ()
