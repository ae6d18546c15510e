"""The request parser's public names; the parser itself is the package bot.parse (one module per step). Kept so
that callers importing bot.request go on working; the names are bot.parse's own, listed once there."""

from __future__ import annotations

from bot.parse import *  # noqa: F403 - re-export of bot.parse's public names
from bot.parse import __all__  # noqa: F401
