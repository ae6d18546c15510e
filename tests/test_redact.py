"""Secrets are scrubbed from anything that leaves the host; ordinary log text is left alone."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.redact import MARK, redact

HF = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz012345"[:34]


@pytest.mark.parametrize(("text", "secret"), [
    (f"HF_TOKEN={HF} python -m sglang.launch_server", HF),
    (f"Cannot access gated repo, token {HF} rejected", HF),
    ("SLACK_BOT_TOKEN=xoxb-1234567890-0987654321-AbCdEfGhIjKl", "xoxb-1234567890-0987654321-AbCdEfGhIjKl"),
    ("app token xapp-1-A01234-5678901234-abcdef0123", "xapp-1-A01234-5678901234-abcdef0123"),
    ("user token xoxp-1111-2222-3333-abcd", "xoxp-1111-2222-3333-abcd"),
    ("aws key AKIAIOSFODNN7EXAMPLE in env", "AKIAIOSFODNN7EXAMPLE"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ('curl -H "Authorization: Bearer eyJhbGciOi.abc-def_ghi"', "eyJhbGciOi.abc-def_ghi"),
    ("pip install --index-url https://deploy:Sup3rS3cret@pypi.example.com/simple x", "Sup3rS3cret"),
    ("redis://:p4ssw0rd@cache:6379/0", "p4ssw0rd"),
    ("vllm serve /models/x --api-key sk-local-abcdef123456 --port 8000", "sk-local-abcdef123456"),
    ("vllm serve /models/x --api-key=abcdef123456", "abcdef123456"),
    ("OPENAI_API_KEY=abc123def456ghi", "abc123def456ghi"),
    ("url?token=0123456789abcdef&x=1", "0123456789abcdef&x=1"),
    ("(APIServer pid=44) non-default args: {'hf_token': 'hf_realtokenvalue1234567890abcd', 'port': 30000}",
     "hf_realtokenvalue1234567890abcd"),
    ("password: hunter2!", "hunter2!"),
    ("ghp_" + "a" * 36 + " pushed", "ghp_" + "a" * 36),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1rZXk"),
])
def test_secrets_are_removed(text, secret):
    out = redact(text)
    assert secret not in out
    assert MARK in out


def test_a_secret_flag_value_is_redacted_even_when_it_reads_like_a_word():
    # The safe side: "--api-key X" always loses X, even in help text.
    assert redact("Use --api-key to require a key") == f"Use --api-key {MARK} require a key"


def test_keys_and_urls_keep_their_shape():
    assert redact(f"HF_TOKEN={HF}") == f"HF_TOKEN={MARK}"
    assert redact("https://bob:pw123456@host/x") == f"https://bob:{MARK}@host/x"
    assert redact("Authorization: Bearer abcdefgh12345") == f"Authorization: Bearer {MARK}"
    assert redact("--api-key s3cretvalue --port 8000") == f"--api-key {MARK} --port 8000"


@pytest.mark.parametrize("text", [
    "[2025-11-11 04:06:27] Decode batch, #running-req: 46, #token: 34901, token usage: 0.19, cuda graph: False, "
    "gen throughput (token/s): 1447.08, #queue-req: 0,",
    "SamplingParams(max_tokens=4096, eos_token_id=2, pad_token: <pad>, skip_special_tokens=True)",
    "Model config: hf_text_config=None, tokenizer='/models/Qwen3-8B', tokenizer_mode=auto",
    "INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)",
    "ValueError: Expected both speculative_model and num_speculative_tokens to be provided",
    "Cannot access gated repo for url https://huggingface.co/meta-llama/Llama-2-7b-chat-hf/resolve/main/config.json.",
    "GPU KV cache size: 251,920 tokens",
])
def test_ordinary_log_text_is_untouched(text):
    assert redact(text) == text


def test_extra_secrets_verbatim_longest_first_and_tiny_ones_ignored():
    text = "signing secret abcd1234efgh and its prefix abcd1234 and a"
    out = redact(text, ["abcd1234", "abcd1234efgh", "a", ""])
    assert "abcd1234" not in out
    assert out.endswith(" and a")


def test_redaction_is_idempotent_on_a_mixed_line():
    text = f"HF_TOKEN={HF} url=https://u:pw9999999@h/p Bearer abcdefghijkl xoxb-1-2-abcdefghijkl"
    once = redact(text)
    assert redact(once) == once


_ALNUM = string.ascii_letters + string.digits


@settings(max_examples=150, deadline=None)
@given(
    token=st.text(alphabet=_ALNUM, min_size=30, max_size=40),
    before=st.text(alphabet=string.printable, max_size=40),
    after=st.text(alphabet=string.printable, max_size=40),
)
def test_any_hf_token_anywhere_is_removed_and_redaction_is_stable(token, before, after):
    secret = "hf_" + token
    text = f"{before} {secret} {after}"
    out = redact(text)
    assert secret not in out
    assert redact(out) == out


@settings(max_examples=100, deadline=None)
@given(secret=st.text(alphabet=string.ascii_letters + string.digits + "!$%^*-_", min_size=4, max_size=30),
       noise=st.text(alphabet=string.printable, max_size=60))
def test_any_extra_secret_is_removed(secret, noise):
    out = redact(noise + secret + noise, [secret])
    assert secret not in out
