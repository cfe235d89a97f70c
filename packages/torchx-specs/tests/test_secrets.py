"""One masking rule for every value torchx shows: by name, and credentials by value."""

from __future__ import annotations

import pytest

from torchx.util.support.secrets import looks_secret, mask_text, mask_url, shown_env_value


@pytest.mark.parametrize(
    "name",
    ["AWS_SECRET_ACCESS_KEY", "HF_TOKEN", "MY_PASS", "GITHUB_PAT", "API_AUTH", "DB_CREDS",
     "db-password", "SSH_PRIVATE_KEY", "SESSION", "X_SIGNATURE"],
)  # fmt: skip
def test_secret_names(name: str) -> None:
    assert looks_secret(name)


@pytest.mark.parametrize("name", ["PATH", "PATH_HINT", "PYTHONPATH", "AUTHOR", "PASSAGE", "LR"])
def test_ordinary_names(name: str) -> None:
    assert not looks_secret(name)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://user:pw@host:5000/x", "http://***@host:5000/x"),
        ("http://TOKEN@host/", "http://***@host/"),
        ("https://h/api?access_token=abc&x=1", "https://h/api?access_token=***&x=1"),
        ("https://s3/b/k?X-Amz-Signature=f00&X-Amz-Date=1", "https://s3/b/k?X-Amz-Signature=***&X-Amz-Date=1"),
        ("http://127.0.0.1:8265", "http://127.0.0.1:8265"),
    ],
)  # fmt: skip
def test_urls(url: str, shown: str) -> None:
    assert mask_url(url) == shown


def test_values_keep_what_is_not_a_credential() -> None:
    text = '{"tracking_uri": "http://u:p@mlflow:5000", "experiment": "exp"}'
    assert mask_text(text) == '{"tracking_uri": "http://***@mlflow:5000", "experiment": "exp"}'
    assert mask_text("key AKIAABCDEFGHIJKLMNOP here") == "key **** here"
    assert shown_env_value("MY_PASS", "x") == "****" and shown_env_value("MY_PASS", "") == ""
    assert shown_env_value("LR", "0.1") == "0.1"


def test_an_env_text_that_cannot_be_split_does_not_echo_credentials() -> None:
    from torchx.util.types import to_dict

    with pytest.raises(ValueError, match="cannot tell where the value") as refused:
        to_dict("DB=postgres://app:pw-five@db/prod?access_token=tok=x,B=1")
    assert "pw-five" not in str(refused.value) and "db/prod" in str(refused.value)


@pytest.mark.parametrize(
    "text, secret, shown",
    [
        ("Authorization: Bearer abcdefghijkl123", "abcdefghijkl123", "Authorization: ****"),
        ('-H "authorization: token ghx123456789"', "ghx123456789", '-H "authorization: ****"'),
        ("Authorization=Basic dXNlcjpwYXNz", "dXNlcjpwYXNz", "Authorization=****"),
        ("curl -H 'Bearer eyJhbGciOiJIUzI1NiJ9abc'", "eyJhbGci", "curl -H 'Bearer ****'"),
        ("db password=hunter2 user=x", "hunter2", "db password=**** user=x"),
        ('DB_PASSWORD: "two words"', "two words", "DB_PASSWORD: ****"),
        ("--api-key=abc123xyz --lr 0.1", "abc123xyz", "--api-key=**** --lr 0.1"),
        (
            "key: -----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----",
            "b3Blbn",
            "key: ****",
        ),
        ("-----BEGIN PRIVATE KEY-----\nMIIEv (cut)", "MIIEv", "****"),
        (
            "notify https://hooks.slack.com/services/T0/B0/XXYYZZ done",
            "XXYYZZ",
            "notify https://hooks.slack.com/**** done",
        ),
        (
            "https://discord.com/api/webhooks/123/abcdef",
            "abcdef",
            "https://discord.com/api/webhooks/****",
        ),
        (
            "https://ci.example.com/hooks/webhook/s3cr3t",
            "s3cr3t",
            "https://ci.example.com/hooks/webhook/****",
        ),
    ],
)
def test_credentials_are_masked_by_their_shape(text: str, secret: str, shown: str) -> None:
    assert mask_text(text) == shown
    assert secret not in mask_text(text)


@pytest.mark.parametrize(
    "text",
    [
        "the bearer of bad news",
        "--max_tokens=5 token_limit=3",
        "path=/tmp/key_dir",
        "https://example.com/docs/webhooks",
        "a basic configuration",
    ],
)
def test_text_that_only_resembles_a_credential_is_kept(text: str) -> None:
    assert mask_text(text) == text
