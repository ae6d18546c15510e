"""Copies of shared/corpus/crashlogs/*.json (with their category) that the crash scenarios replay."""
