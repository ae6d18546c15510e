"""Scrub secrets from text before it leaves the host (Slack posts, the store, excerpts, diagnoses).

Two kinds of secret are recognised:
- by their shape, wherever they appear: Hugging Face tokens (``hf_...``), Slack tokens (``xox?-...``, ``xapp-...``),
  AWS access key ids (``AKIA...``/``ASIA...``), GitHub and OpenAI-style keys, JWTs, private-key blocks;
- by their position: the value after ``Bearer``, after a secret-named key (``API_KEY=``, ``token=``,
  ``aws_secret_access_key =``, ``'hf_token': '...'``, ``--api-key X``) and the password in ``scheme://user:PASS@host``.
Plus any ``extra_secrets`` given by the caller (the bot's own tokens), replaced verbatim.

Redaction keeps the key and the shape of the line (``HF_TOKEN=[REDACTED]``) so the text still reads, and it is
idempotent: redacting twice gives the same text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

MARK = "[REDACTED]"

#: Values shorter than this given in extra_secrets are ignored: replacing "a" everywhere would wreck the text and
#: such a value is no secret worth the name.
MIN_EXTRA_SECRET_LEN = 4
#: A run of this many characters of a known secret is redacted wherever it appears: a log read from a byte offset
#: (or a line cut at a length limit) can start or end inside a token, and then neither the whole value nor its
#: prefix is there. 12 characters of a random token are still most of its secret; shorter runs match by chance.
FRAGMENT_LEN = 12

# Secrets recognised by their own shape. Word boundaries keep identifiers such as ``hf_text_config`` untouched.
_SHAPED: tuple[re.Pattern[str], ...] = (
    re.compile(r"\bhf_[A-Za-z0-9]{20,}\b"),                                   # Hugging Face user/org tokens
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{8,}"),                            # Slack bot/user/app-level tokens
    re.compile(r"\bxapp-[A-Za-z0-9-]{8,}"),                                   # Slack app-level tokens
    re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[A-Z0-9]{16}\b"),              # AWS access key ids
    re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}\b"),              # GitHub tokens
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{30,}\b"),
    re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}"),                    # OpenAI / Anthropic style API keys
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),  # JWTs
    re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/]+"),          # Slack incoming webhooks
)

_PRIVATE_KEY = re.compile(
    r"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----.*?(?:-----END (?:[A-Z]+ )?PRIVATE KEY-----|\Z)", re.DOTALL
)

_BEARER = re.compile(r"(?i)\b(Bearer|Basic)(\s+)(?!\[REDACTED\])([A-Za-z0-9._~+/=-]{8,})")

# scheme://user:PASSWORD@host -> keep user and host. The user part may be empty (redis://:pass@host).
_URL_PASSWORD = re.compile(r"(?<![a-zA-Z0-9+.-])([a-zA-Z][a-zA-Z0-9+.-]*+://[^\s:/@'\"]*:)([^\s@/'\"]+)(@)")

# A secret-named key followed by its value: ENV style, key=value, JSON/Python dict style, or a CLI flag.
# The key may carry a prefix (SLACK_BOT_TOKEN, aws_secret_access_key); "max_tokens"/"eos_token_id" do not match
# because the name must END with the secret word.
_SECRET_WORDS = r"(?:api[_-]?key|access[_-]?key|secret(?:[_-]?(?:access[_-]?)?key)?|token|password|passwd|credentials?)"
_KEY_VALUE = re.compile(
    r"(?i)(?P<key>(?<![\w-])(?:--?)?(?:[a-z0-9]+[_-])*" + _SECRET_WORDS + r")(?![\w-])"
    r"(?P<sep>['\"]?\s*[=:]\s*['\"]?|\s+(?=\S))"
    r"(?P<val>[^\s'\",;}]+)"
)


def _key_value(match: re.Match[str]) -> str:
    key, sep, value = match.group("key"), match.group("sep"), match.group("val")
    if value == MARK or value.startswith(MARK):
        return match.group(0)
    is_flag = key.startswith("-")
    if not is_flag and sep.strip() == "":
        # "token 12" in prose is not an assignment; only a CLI flag takes its value after a space.
        return match.group(0)
    if key.lower().endswith(("token", "credential", "credentials")) and (len(value) < 8 or value.isdigit()):
        # "#token: 137" (SGLang decode stats), "pad_token: <pad>": counts and markers, not secrets.
        return match.group(0)
    if value.lower() in {"none", "null", "true", "false", "''", '""', "xxxxx", "***"}:
        return match.group(0)
    return f"{key}{sep}{MARK}"


def redact(text: str, extra_secrets: Iterable[str] = ()) -> str:
    """``text`` with every recognised secret replaced by ``[REDACTED]`` (keys and URLs keep their shape)."""
    if not text:
        return text
    # Verbatim secrets first and longest first, so that a secret containing another is removed whole.
    known = sorted({s for s in extra_secrets if s and len(s.strip()) >= MIN_EXTRA_SECRET_LEN}, key=len, reverse=True)
    for secret in known:
        text = text.replace(secret, MARK)
    text = redact_fragments(text, tuple(s for s in known if len(s) >= FRAGMENT_LEN))
    text = _PRIVATE_KEY.sub(MARK, text)
    for pattern in _SHAPED:
        text = pattern.sub(MARK, text)
    text = _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}{MARK}", text)
    text = _URL_PASSWORD.sub(lambda m: m.group(0) if m.group(2) == MARK else f"{m.group(1)}{MARK}{m.group(3)}",
                             text)
    return _KEY_VALUE.sub(_key_value, text)


@lru_cache(maxsize=32)
def _fragment_pattern(secrets: tuple[str, ...]) -> re.Pattern[str]:
    grams = {secret[i:i + FRAGMENT_LEN] for secret in secrets for i in range(len(secret) - FRAGMENT_LEN + 1)}
    return re.compile("|".join(re.escape(gram) for gram in sorted(grams)))


def redact_fragments(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` with every run of ``FRAGMENT_LEN``+ characters of one of ``secrets`` replaced by the mark (the run
    is widened to all the characters that still follow the secret on either side)."""
    if not secrets or len(text) < FRAGMENT_LEN:
        return text
    pattern = _fragment_pattern(secrets)
    spans: list[tuple[int, int]] = []
    for match in pattern.finditer(text):
        start, end = match.span()
        if spans and start < spans[-1][1]:
            continue
        gram = match.group(0)
        for secret in secrets:
            offset = secret.find(gram)
            if offset == -1:
                continue
            left, right = start, end
            while left > 0 and offset - (start - left) > 0 and text[left - 1] == secret[offset - (start - left) - 1]:
                left -= 1
            while right < len(text) and offset + (right - start) < len(secret) \
                    and text[right] == secret[offset + (right - start)]:
                right += 1
            spans.append((left, right))
            break
    if not spans:
        return text
    out, last = [], 0
    for left, right in spans:
        left = max(left, last)
        out.append(text[last:left])
        out.append(MARK)
        last = right
    out.append(text[last:])
    return "".join(out)
