"""A tail read from a byte offset starts at a line boundary, and a secret's long fragments are redacted: an HF token
cut mid-value at the start of the window is never posted. Over the real sshd (the `logs` path reads the end of the
log with fetch_tail, then redacts it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import Secrets, parse_config
from bot.backends.process import drop_partial_first_line, fetch_tail
from bot.pipeline import Pipeline
from bot.redact import FRAGMENT_LEN, redact
from bot.store import Store
from bot.tail import TAIL_BYTES, read_tail
from tests.test_pipeline_ssh import ssh_config

TOKEN = "hf_" + "Zq7Wv2Ln9Pk4Tx8Rb3Mc6Yd1Hs5Gf0JuEa"  # 37 characters, the shape of a real one
LOGS_WINDOW = 64 * 1024  # what Pipeline.logs reads


def _fragments(text: str, secret: str) -> list[str]:
    return [secret[i:i + FRAGMENT_LEN] for i in range(len(secret) - FRAGMENT_LEN + 1)
            if secret[i:i + FRAGMENT_LEN] in text]


def _log_cut_inside_the_token(path: Path, window: int, kept_of_token: int = 20) -> list[str]:
    """A log whose last ``window`` bytes start ``kept_of_token`` characters before the token's end."""
    steps = "".join(f"INFO decode step {i}\n" for i in range(2000))
    after_len = window - kept_of_token
    first = " fetched from the hub cache\n"
    filler = "INFO " + "." * (after_len - len(first) - len(steps) - 6) + "\n"  # sizes the rest to the window
    after = first + filler + steps
    assert len(after.encode()) == after_len
    text = "INFO starting\nINFO downloading with " + TOKEN + after
    path.write_text(text)
    assert path.read_bytes()[-window:].startswith(TOKEN[-kept_of_token:].encode())
    return text.splitlines()


@pytest.mark.parametrize("window", [LOGS_WINDOW, TAIL_BYTES])
async def test_a_token_cut_at_the_window_start_is_never_posted_over_ssh(sshd, simhost, tmp_path, window) -> None:
    log = tmp_path / "server.log"
    lines = _log_cut_inside_the_token(log, window)
    pipeline = Pipeline(parse_config(ssh_config(sshd, simhost)), Store(tmp_path / "s.db"),
                        secrets=Secrets(hf_token=TOKEN))
    try:
        tail = await fetch_tail(pipeline.remotes.get("CT129"), str(log), window)
    finally:
        await pipeline.close()
    got = tail.splitlines()
    assert got[0].startswith("INFO ....")  # the line after the cut one
    assert got[-1] == lines[-1] and set(got) <= set(lines)  # whole lines only, nothing invented
    assert not _fragments(tail, TOKEN)
    assert not _fragments(pipeline.redact(tail), TOKEN)


def test_long_fragments_of_a_known_secret_are_redacted_anywhere() -> None:
    text = f"a {TOKEN[-20:]} b {TOKEN[:15]} c {TOKEN[5:5 + FRAGMENT_LEN]} d {TOKEN[:FRAGMENT_LEN - 1]}"
    out = redact(text, [TOKEN])
    assert out == f"a [REDACTED] b [REDACTED] c [REDACTED] d {TOKEN[:FRAGMENT_LEN - 1]}"
    assert redact(out, [TOKEN]) == out  # idempotent
    assert redact("an ordinary line with no secret", [TOKEN]) == "an ordinary line with no secret"


def test_a_fragment_is_redacted_even_without_the_line_drop() -> None:
    """The two guards are independent: a partial first line holding 20 characters of the token is redacted."""
    assert _fragments(redact(TOKEN[-20:] + " fetched\n", [TOKEN]), TOKEN) == []


def test_drop_partial_first_line() -> None:
    assert drop_partial_first_line("abc\ndef\n", 100) == "abc\ndef\n"  # the whole file
    assert drop_partial_first_line("xyz\ndef\n", 7) == "def\n"  # 8 bytes read for 7: the file was longer
    assert drop_partial_first_line("\ndef\n", 4) == "def\n"  # the extra byte was the newline: "def" is whole
    assert drop_partial_first_line("abcdefgh", 7) == "bcdefgh"  # one giant line: its last 7 bytes


def test_read_tail_drops_the_partial_first_line(tmp_path) -> None:
    log = tmp_path / "server.log"
    _log_cut_inside_the_token(log, LOGS_WINDOW)
    assert not _fragments(read_tail(log, LOGS_WINDOW), TOKEN)
