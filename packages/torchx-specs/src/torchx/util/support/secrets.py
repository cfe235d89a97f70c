"""What torchx never shows in clear: secrets among env values, and credentials in URLs.

One rule for every place a value is printed (``torchx describe``, warnings, errors,
``torchx check``): a value is masked when its name says it is a secret, and, whatever its
name, the credentials inside it are masked: a URL's user-info (``user:pass@``, or a bare
``TOKEN@``), secret query parameters (``?access_token=``), webhook URLs (Slack, Discord,
Teams, any ``/webhook/`` path), ``Authorization:`` and ``Bearer`` values,
``password=``-style pairs, PEM private keys, and tokens of well-known shapes (GitHub,
GitLab, Slack, Hugging Face, OpenAI-style keys, AWS access key ids, JWTs).
"""

from __future__ import annotations

import re

__all__ = ["MASK", "looks_secret", "mask_text", "mask_url", "shown_env_value"]

MASK = "****"

# name parts that mark a secret wherever they appear in the name
_SECRET_WORDS = ("SECRET", "TOKEN", "PASSWORD", "PASSWD", "KEY", "CREDENTIAL", "PRIVATE")
# short parts that mark one only as a whole part of the name (PAT, not PATH)
_SECRET_PARTS = frozenset(
    {"PASS", "PAT", "AUTH", "CREDS", "CRED", "PWD", "SIG", "SIGNATURE", "COOKIE", "SESSION"}
)

_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/@\s]+)@")
_SECRET_QUERY = re.compile(
    r"(?P<key>[?&;](?:access_token|token|auth|key|api_key|apikey|password|passwd|secret"
    r"|sig|signature|x-amz-signature|x-amz-security-token|code)=)(?P<value>[^&#\s]+)",
    re.IGNORECASE,
)
_TOKEN_SHAPES = re.compile(
    r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}|hf_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9_-]{20,}"
    r"|(?:AKIA|ASIA)[A-Z0-9]{16}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})"
)


_PEM = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
    re.DOTALL,
)
_AUTH_HEADER = re.compile(
    r"(?P<key>\b(?:proxy-)?authorization\s*[:=]\s*)(?P<value>(?:[A-Za-z]+\s+)?[^\s,;'\"]+)",
    re.IGNORECASE,
)
_AUTH_SCHEME = re.compile(r"(?P<key>\bbearer\s+)(?P<value>[A-Za-z0-9._~+/=-]{8,})", re.IGNORECASE)
_SECRET_PAIR = re.compile(
    r"(?P<key>\b[A-Za-z0-9_.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key)"
    r"\s*[=:]\s*)(?P<value>\"[^\"]*\"|'[^']*'|[^\s&;,'\"]+)",
    re.IGNORECASE,
)
_WEBHOOK = re.compile(
    r"(?P<key>\bhttps?://(?:hooks\.slack\.com|(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks"
    r"|[A-Za-z0-9.-]*webhook\.office\.com|[^\s/]+/(?:[^\s?#]*/)?webhooks?)/)(?P<value>[^\s'\"]+)",
    re.IGNORECASE,
)


def looks_secret(name: str) -> bool:
    """Whether an env var's name says it holds a secret (``AWS_SECRET_ACCESS_KEY``,
    ``HF_TOKEN``, ``MY_PASS``, ``GITHUB_PAT``, ``API_AUTH``, ``DB_CREDS``)."""
    upper = name.upper()
    if any(word in upper for word in _SECRET_WORDS):
        return True
    return any(part in _SECRET_PARTS for part in re.split(r"[^A-Z0-9]+", upper))


def mask_url(url: str) -> str:
    """``url`` with its user-info and secret query values replaced by ``***``."""
    masked = _USERINFO.sub(lambda m: f"{m.group('scheme')}***@", url)
    return _SECRET_QUERY.sub(lambda m: f"{m.group('key')}***", masked)


def _keep_key(match: re.Match[str]) -> str:
    return f"{match.group('key')}{MASK}"


def mask_text(text: str) -> str:
    """``text`` with every credential inside it masked (URLs anywhere in it included)."""
    masked = _PEM.sub(MASK, _WEBHOOK.sub(_keep_key, mask_url(text)))
    for pattern in (_AUTH_HEADER, _AUTH_SCHEME, _SECRET_PAIR):
        masked = pattern.sub(_keep_key, masked)
    return _TOKEN_SHAPES.sub(MASK, masked)


def shown_env_value(name: str, value: str) -> str:
    """How an env var is shown: masked whole when its name says secret, else with the
    credentials inside its value masked."""
    if looks_secret(name) and value:
        return MASK
    return mask_text(value)
