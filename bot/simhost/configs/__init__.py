"""Copies of shared/configs/*.json (byte for byte; provenance in SIZES.md), shipped with the package."""
