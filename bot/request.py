"""The request parser's public names; the parser itself is the package bot.parse (one module per step)."""

from __future__ import annotations

from bot.parse import (
    MAX_REQUEST_CHARS,
    QUANTIZATION_METHODS,
    Inventory,
    InventoryHost,
    example_requests,
    help_text,
    is_help_request,
    parse_request,
    request_text,
)

__all__ = [
    "Inventory",
    "InventoryHost",
    "MAX_REQUEST_CHARS",
    "QUANTIZATION_METHODS",
    "example_requests",
    "help_text",
    "is_help_request",
    "parse_request",
    "request_text",
]
