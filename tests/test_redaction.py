"""Tests for sessionstore._redaction (docs/SECURITY.md, "Redaction").

Secret-shaped samples are assembled at import time so that no realistic credential is written
in the repository (secret scanners would flag it); they have the real formats and lengths.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import hmac
import json
import re
import time
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionstore._events import Event
from sessionstore._redaction import (
    DEFAULT_PATTERNS,
    REPLACEMENT,
    Redactor,
    _bare_values,
    parse_patterns,
    redaction_disabled_event,
)

R = REPLACEMENT
REDACTOR = Redactor()


def repeat(chunk: str, length: int) -> str:
    """`chunk` repeated and cut to exactly `length` characters."""
    return (chunk * (length // len(chunk) + 1))[:length]


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def make_jwt() -> str:
    """A real HS256 JWT (header.payload.signature)."""
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = b64url(json.dumps({"sub": "user-42", "iat": 1760853600}).encode())
    signature = hmac.new(b"test-key", f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{b64url(signature)}"


OPENAI_KEY = "sk-proj-" + repeat("Xq7Lm2Rt9Vb4Nc8Kd1_w-", 156)
OPENAI_LEGACY_KEY = "sk-" + repeat("T3BlbkFJ9xYzQ4", 48)
OPENAI_LETTERS_KEY = "sk-proj-" + repeat("QwErTyUiOpAsDfGh_jKlZx-", 156)  # no digit at all
GITHUB_PAT = "ghp_" + repeat("R4nd0mT0k3nV4lu3", 36)
GITHUB_OAUTH = "gho_" + repeat("Q9w8E7r6T5y4U3i2", 36)
GITHUB_APP = "ghs_" + repeat("Z1x2C3v4B5n6M7", 36)
GITHUB_FINE = "github_pat_" + "11AB3CDEF0" + repeat("xY9_kL2mN5pQ", 72)
SLACK_BOT = "xoxb-" + "2048163264-4096128256512-" + repeat("aB3dE6gH9jK2", 24)
GOOGLE_KEY = "AIza" + repeat("SyD4x9Lq2Vb7Kz_Mw-3Rt8", 35)
AWS_KEY_ID = "AKIA" + "IOSFODNN7EXAMPLE"
AWS_STS_KEY_ID = "ASIA" + "Y34FZKBOKMUTVV7A"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
OAUTH_ACCESS = "ya29." + repeat("a0AfH6SMBx3Kq9Lm_Vb2", 120)
OPAQUE_TOKEN = "8f14e45fceea167a" + "5a36dedd4bea2543"
JWT = make_jwt()

# (id, text, secret, expected): realistic surroundings, one or more per secret kind.
CASES: list[tuple[str, str, str, str]] = [
    (
        "seed-api-key-log-line",
        "2025-10-19T06:00:00Z INFO agent.run api_key=sk-abc123 model=gpt-5 retries=3",
        "sk-abc123",
        "2025-10-19T06:00:00Z INFO agent.run api_key=<REDACTED> model=gpt-5 retries=3",
    ),
    (
        "api-key-header",
        "x-api-key: 3f9c2a71-5b8e-4d6a-9e1f-0c7b2d4a8e63\naccept: application/json",
        "3f9c2a71-5b8e-4d6a-9e1f-0c7b2d4a8e63",
        "x-api-key: <REDACTED>\naccept: application/json",
    ),
    (
        "seed-password-yaml",
        "database:\n  host: db.internal\n  password: hunter2\n  pool: 5\n",
        "hunter2",
        "database:\n  host: db.internal\n  password: <REDACTED>\n  pool: 5\n",
    ),
    (
        "password-json-text",
        '{"user": "app", "password": "Tr0ub4dor&3", "port": 5432}',
        "Tr0ub4dor&3",
        '{"user": "app", "password": "<REDACTED>", "port": 5432}',
    ),
    (
        "password-yaml-quoted-with-spaces",
        'smtp:\n  password: "correct horse battery staple"\n  port: 587\n',
        "correct horse battery staple",
        'smtp:\n  password: "<REDACTED>"\n  port: 587\n',
    ),
    (
        "password-python-repr",
        "{'password': 'hunter2!x', 'user': 'bob'}",
        "hunter2!x",
        "{'password': '<REDACTED>', 'user': 'bob'}",
    ),
    (
        "password-named-twice-in-prose",
        "step 1: here is the password: password: hunter2-Correct-Horse",
        "hunter2-Correct-Horse",
        "step 1: here is the password: password: <REDACTED>",
    ),
    (
        "password-cli-flag",
        "docker login registry.example.com --username ci --password 9vX!t2Lq",
        "9vX!t2Lq",
        "docker login registry.example.com --username ci --password <REDACTED>",
    ),
    (
        "passwd-mysql-ini",
        "[client]\nuser = root\npasswd = s3cr3t!Pw\nhost = 127.0.0.1\n",
        "s3cr3t!Pw",
        "[client]\nuser = root\npasswd = <REDACTED>\nhost = 127.0.0.1\n",
    ),
    (
        "pwd-odbc-connection-string",
        "Driver={ODBC Driver 18 for SQL Server};Server=db;Uid=sa;Pwd=Str0ng!Pass;",
        "Str0ng!Pass",
        "Driver={ODBC Driver 18 for SQL Server};Server=db;Uid=sa;Pwd=<REDACTED>",
    ),
    (
        "passphrase-env",
        'GPG_PASSPHRASE="blue sky 42"\nGPG_KEY_ID=0xDEADBEEF\n',
        "blue sky 42",
        'GPG_PASSPHRASE="<REDACTED>"\nGPG_KEY_ID=0xDEADBEEF\n',
    ),
    (
        "secret-key-dotenv",
        "DJANGO_SECRET_KEY=django-insecure-9x#k2!m\nDEBUG=false\n",
        "django-insecure-9x#k2!m",
        "DJANGO_SECRET_KEY=<REDACTED>\nDEBUG=false\n",
    ),
    (
        "client-secret-json",
        '{"client_id": "web-app", "client_secret": "8Zk~Q2.vLx_9pR", "grant_type": "x"}',
        "8Zk~Q2.vLx_9pR",
        '{"client_id": "web-app", "client_secret": "<REDACTED>", "grant_type": "x"}',
    ),
    (
        "access-and-refresh-token-oauth-response",
        f'{{"access_token": "{OAUTH_ACCESS}", "expires_in": 3599, '
        '"refresh_token": "1//0gLxRt9-Vb2Kq", "token_type": "Bearer"}',
        OAUTH_ACCESS,
        '{"access_token": "<REDACTED>", "expires_in": 3599, '
        '"refresh_token": "<REDACTED>", "token_type": "Bearer"}',
    ),
    (
        "camel-case-json-keys",
        '{"secretAccessKey": "k3y/V4lue", "accessToken": "t0k.en", "region": "eu"}',
        "k3y/V4lue",
        '{"secretAccessKey": "<REDACTED>", "accessToken": "<REDACTED>", "region": "eu"}',
    ),
    (
        "token-env-github",
        f"export GITHUB_TOKEN={GITHUB_PAT}\ngh pr list --state open",
        GITHUB_PAT,
        "export GITHUB_TOKEN=<REDACTED>\ngh pr list --state open",
    ),
    (
        "bearer-spec-example-jwt",
        f"Authorization: Bearer {JWT}",
        JWT,
        "Authorization: Bearer <REDACTED>",
    ),
    (
        "bearer-curl-command",
        f'curl -s -H "Authorization: Bearer {OAUTH_ACCESS}" https://www.googleapis.com/drive/v3',
        OAUTH_ACCESS,
        'curl -s -H "Authorization: Bearer <REDACTED>" https://www.googleapis.com/drive/v3',
    ),
    (
        "bearer-outside-header",
        f'{{"auth_header": "Bearer {OPAQUE_TOKEN}", "retries": 2}}',
        OPAQUE_TOKEN,
        '{"auth_header": "Bearer <REDACTED>", "retries": 2}',
    ),
    (
        "basic-auth-http-trace",
        "> GET /api HTTP/1.1\n> Host: example.com\n> Authorization: Basic YWRtaW46czNjcjN0\n",
        "YWRtaW46czNjcjN0",
        "> GET /api HTTP/1.1\n> Host: example.com\n> Authorization: Basic <REDACTED>\n",
    ),
    (
        "aws-credentials-file",
        f"[default]\naws_access_key_id = {AWS_KEY_ID}\n"
        f"aws_secret_access_key = {AWS_SECRET}\nregion = us-east-1\n",
        AWS_SECRET,
        "[default]\naws_access_key_id = <REDACTED>\n"
        "aws_secret_access_key = <REDACTED>\nregion = us-east-1\n",
    ),
    (
        "aws-sts-key-id-env",
        f"AWS_ACCESS_KEY_ID={AWS_STS_KEY_ID}\nAWS_REGION=eu-west-1",
        AWS_STS_KEY_ID,
        "AWS_ACCESS_KEY_ID=<REDACTED>\nAWS_REGION=eu-west-1",
    ),
    (
        "aws-key-id-in-prose",
        f"The failing request was signed with {AWS_KEY_ID}, rotate it.",
        AWS_KEY_ID,
        "The failing request was signed with <REDACTED>, rotate it.",
    ),
    (
        "jwt-in-cookie",
        f"Cookie: session={JWT}; theme=dark",
        JWT,
        "Cookie: session=<REDACTED>; theme=dark",
    ),
    (
        "openai-key-in-sdk-code",
        f'client = OpenAI(api_key="{OPENAI_KEY}")',
        OPENAI_KEY,
        'client = OpenAI(api_key="<REDACTED>")',
    ),
    (
        "openai-project-key-without-a-digit",
        f"leaked in the build log: {OPENAI_LETTERS_KEY} (rotated since)",
        OPENAI_LETTERS_KEY,
        "leaked in the build log: <REDACTED> (rotated since)",
    ),
    (
        "openai-legacy-key-printed",
        f"$ echo $OPENAI_API_KEY\n{OPENAI_LEGACY_KEY}\n$ ",
        OPENAI_LEGACY_KEY,
        "$ echo $OPENAI_API_KEY\n<REDACTED>\n$ ",
    ),
    (
        "github-pat-in-remote-url",
        f"git remote set-url origin https://{GITHUB_PAT}@github.com/acme/api.git",
        GITHUB_PAT,
        "git remote set-url origin https://<REDACTED>@github.com/acme/api.git",
    ),
    (
        "github-app-token-as-url-password",
        f"cloning https://x-access-token:{GITHUB_APP}@github.com/acme/api.git",
        GITHUB_APP,
        # "token:" is a secret name too and a bare value runs to whitespace: safe, if wordy.
        "cloning https://x-access-token:<REDACTED>",
    ),
    (
        "github-oauth-token-log",
        f"oauth exchange ok: {GITHUB_OAUTH} (scope=repo)",
        GITHUB_OAUTH,
        "oauth exchange ok: <REDACTED> (scope=repo)",
    ),
    (
        "github-fine-grained-pat",
        f"gh auth login --with-token <<< {GITHUB_FINE}",
        GITHUB_FINE,
        "gh auth login --with-token <<< <REDACTED>",
    ),
    (
        "slack-bot-token",
        f"Posting to #deploys with {SLACK_BOT}",
        SLACK_BOT,
        "Posting to #deploys with <REDACTED>",
    ),
    (
        "google-api-key-in-url",
        f"GET https://maps.googleapis.com/maps/api/geocode/json?address=Paris&key={GOOGLE_KEY} 200",
        GOOGLE_KEY,
        "GET https://maps.googleapis.com/maps/api/geocode/json?address=Paris&key=<REDACTED> 200",
    ),
    (
        "postgres-url",
        "DATABASE_URL=postgresql+asyncpg://app_user:Xk9mQ2vLp@db.internal:5432/sessions",
        "Xk9mQ2vLp",
        "DATABASE_URL=postgresql+asyncpg://app_user:<REDACTED>@db.internal:5432/sessions",
    ),
    (
        "redis-url-without-user",
        "connecting to redis://:s3cr3tR3dis@cache.internal:6379/0 ...",
        "s3cr3tR3dis",
        "connecting to redis://:<REDACTED>@cache.internal:6379/0 ...",
    ),
    (
        "mongodb-srv-url-encoded-password",
        "mongodb+srv://admin:p%40ssw0rd@cluster0.example.net/app?retryWrites=true",
        "p%40ssw0rd",
        "mongodb+srv://admin:<REDACTED>@cluster0.example.net/app?retryWrites=true",
    ),
    (
        "amqp-url-unencoded-at",
        "broker: amqp://guest:p@ss@rabbit:5672/",
        "p@ss",
        "broker: amqp://guest:<REDACTED>@rabbit:5672/",
    ),
]


@pytest.mark.parametrize(
    ("text", "secret", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_secret_kinds_are_redacted_with_context_kept(text: str, secret: str, expected: str) -> None:
    redacted = REDACTOR.text(text)
    assert secret not in redacted
    assert redacted == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("api_key=sk-abc123", "api_key=<REDACTED>"),  # redacted before export
        ('"password": "hunter2"', '"password": "<REDACTED>"'),
        (f"Authorization: Bearer {JWT}", "Authorization: Bearer <REDACTED>"),
        ("API-KEY : abc", "API-KEY : <REDACTED>"),  # the default patterns are case-insensitive
        ("apikey=abc", "apikey=<REDACTED>"),
        ("Password=hunter2", "Password=<REDACTED>"),
    ],
)
def test_spec_examples(text: str, expected: str) -> None:
    assert REDACTOR.text(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "api_key=sk-abc123",
        "API_KEY: x",
        "my api-key= 123",
        "password=hunter2",
        "PASSWORD : hunter2",
        "db password:hunter2,port=5",
    ],
)
def test_everything_the_seed_patterns_catch_is_gone(text: str) -> None:
    seed = [
        r"(?i)api[_-]?key\s*[:=]\s*(\S+)",
        r"(?i)password\s*[:=]\s*(\S+)",
    ]  # the documented default patterns
    secrets = [match.group(1) for pattern in seed for match in re.finditer(pattern, text)]
    assert secrets
    redacted = REDACTOR.text(text)
    assert all(secret not in redacted for secret in secrets)


def _private_keys() -> dict[str, str]:
    ec_key = ec.generate_private_key(ec.SECP256R1())
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    ed_key = ed25519.Ed25519PrivateKey.generate()
    pem, pkcs8 = serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8
    plain = serialization.NoEncryption()
    keys = {
        "pkcs8": ec_key.private_bytes(pem, pkcs8, plain),
        "ec": ec_key.private_bytes(pem, serialization.PrivateFormat.TraditionalOpenSSL, plain),
        "rsa": rsa_key.private_bytes(pem, serialization.PrivateFormat.TraditionalOpenSSL, plain),
        "openssh": ed_key.private_bytes(pem, serialization.PrivateFormat.OpenSSH, plain),
        "encrypted": ec_key.private_bytes(
            pem, pkcs8, serialization.BestAvailableEncryption(b"pass phrase")
        ),
    }
    return {name: key.decode() for name, key in keys.items()}


PRIVATE_KEYS = _private_keys()


def pem_body(pem: str) -> list[str]:
    return [line for line in pem.splitlines()[1:-1] if line]


@pytest.mark.parametrize("name", sorted(PRIVATE_KEYS))
def test_pem_private_key_block_is_redacted_and_armor_kept(name: str) -> None:
    pem = PRIVATE_KEYS[name]
    begin, end = pem.splitlines()[0], pem.splitlines()[-1]
    redacted = REDACTOR.text(f"$ cat ~/.ssh/id_{name}\n{pem}$ ls ~/.ssh\n")
    assert redacted == f"$ cat ~/.ssh/id_{name}\n{begin}<REDACTED>{end}\n$ ls ~/.ssh\n"
    assert all(line not in redacted for line in pem_body(pem))


def test_truncated_pem_private_key_is_still_redacted() -> None:
    pem = PRIVATE_KEYS["rsa"]
    truncated = pem[: len(pem) // 2]
    redacted = REDACTOR.text(f"output truncated:\n{truncated}")
    assert redacted == f"output truncated:\n{pem.splitlines()[0]}<REDACTED>"


def test_pem_inside_service_account_json_keeps_the_document_valid() -> None:
    account = {
        "type": "service_account",
        "private_key_id": "4f2a9c1e",
        "private_key": PRIVATE_KEYS["pkcs8"],
        "client_email": "agent@proj.iam.gserviceaccount.com",
    }
    redacted = json.loads(REDACTOR.text(json.dumps(account, indent=2)))
    assert redacted == {**account, "private_key": R}


def test_yaml_snippet_stays_valid_yaml_with_every_secret_gone() -> None:
    snippet = (
        "database:\n"
        "  url: postgresql://app:Xk9mQ2vLp@db.internal:5432/app\n"
        '  password: "correct horse battery staple"\n'
        "aws:\n"
        f"  aws_access_key_id: {AWS_KEY_ID}\n"
        f"  aws_secret_access_key: {AWS_SECRET}\n"
        "openai:\n"
        f"  api_key: {OPENAI_KEY}\n"
        "  model: gpt-5\n"
    )
    assert yaml.safe_load(REDACTOR.text(snippet)) == {
        "database": {"url": f"postgresql://app:{R}@db.internal:5432/app", "password": R},
        "aws": {"aws_access_key_id": R, "aws_secret_access_key": R},
        "openai": {"api_key": R, "model": "gpt-5"},
    }


def test_json_nested_in_a_json_string_is_redacted_inside() -> None:
    text = json.dumps({"arguments": json.dumps({"user": "bob", "password": "hunter2"})})
    inner = json.loads(json.loads(REDACTOR.text(text))["arguments"])
    assert inner == {"user": "bob", "password": R}


def test_responses_items_are_redacted_field_by_field() -> None:
    call = {
        "type": "function_call",
        "call_id": "call_7Hq2",
        "name": "http_request",
        "arguments": json.dumps(
            {
                "url": "https://api.openai.com/v1/models",
                "headers": {"Authorization": f"Bearer {OPENAI_KEY}"},
            }
        ),
    }
    output = {
        "type": "function_call_output",
        "call_id": "call_7Hq2",
        "output": f"HTTP/1.1 401\nwww-authenticate: Bearer\n\nkey {AWS_KEY_ID} is disabled",
    }
    message = {
        "role": "user",
        "content": [
            {"type": "input_text", "text": f"deploy with aws_secret_access_key={AWS_SECRET}"},
            {"type": "input_image", "image_url": "https://example.com/diagram.png"},
        ],
    }
    redacted_call = REDACTOR.item(call)
    assert {k: v for k, v in redacted_call.items() if k != "arguments"} == {
        k: v for k, v in call.items() if k != "arguments"
    }
    assert json.loads(redacted_call["arguments"])["headers"] == {"Authorization": f"Bearer {R}"}
    assert REDACTOR.item(output)["output"] == (
        f"HTTP/1.1 401\nwww-authenticate: Bearer\n\nkey {R} is disabled"
    )
    redacted_message = REDACTOR.item(message)
    assert redacted_message["content"][0] == {
        "type": "input_text",
        "text": f"deploy with aws_secret_access_key={R}",
    }
    assert redacted_message["content"][1] is message["content"][1]  # untouched parts are shared


def test_chat_completions_tool_messages_are_redacted() -> None:
    assistant = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_abc",
                "type": "function",
                "function": {"name": "post", "arguments": json.dumps({"token": SLACK_BOT})},
            }
        ],
    }
    tool = {
        "role": "tool",
        "tool_call_id": "call_abc",
        "content": f"SLACK_BOT_TOKEN={SLACK_BOT}\nSLACK_CHANNEL=#deploys",
    }
    redacted = REDACTOR.value([assistant, tool])
    assert redacted[0]["content"] is None
    assert json.loads(redacted[0]["tool_calls"][0]["function"]["arguments"]) == {"token": R}
    assert redacted[1] == {**tool, "content": f"SLACK_BOT_TOKEN={R}\nSLACK_CHANNEL=#deploys"}


@pytest.mark.parametrize(
    "text",
    [
        "the token budget is 5000 tokens",
        "password policy requires 12 characters",
        "https://example.com:8443/docs/api?page=2&sort=asc#auth",
        "postgresql://db.internal:5432/app",
        "git@github.com:openai/openai-agents-python.git",
        "max_tokens=4096, prompt_tokens: 1200, token_count=17, tokenizer: o200k_base",
        '{"token_type": "Bearer", "max_tokens": 4096, "private_key_id": "4f2a"}',
        "tokens = tokenizer.encode(text)",
        "token = tokenizer.encode(text)",
        'api_key = os.environ["OPENAI_API_KEY"]',
        "password = getpass.getpass()",
        "def check_password(candidate: str) -> bool:",
        "SELECT id, secret_id FROM vault WHERE tokenized = true",
        "Use scikit-learn (sk-learn) for the baseline; see the risk-adjusted-returns-2024 note.",
        "Tag it sk-proj-management-guidelines-for-teams (see sk-admin-console-overview).",
        "The bearer of this note may pass. Bearer tokens are described in RFC 6750.",
        "authorization is required for this endpoint",
        "AKIA is the prefix of long-term AWS access key ids",
        "docker login --password-stdin < token.txt",
        "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----",
        # Base64 payloads (encrypted reasoning, images) never meet "name=value" shapes.
        "gAAAAABm" + repeat("Xk9mQ2vLpRt7", 120) + "Pwd==",
        "data:image/png;base64,iVBORw0KGgo" + repeat("AAAANSUhEUgAAAAEAAAAB/token+", 200) + "=",
    ],
)
def test_no_false_positives_on_ordinary_prose_and_code(text: str) -> None:
    assert REDACTOR.text(text) is text


def test_every_default_pattern_is_exercised_by_a_case() -> None:
    samples = [c[1] for c in CASES] + [PRIVATE_KEYS["rsa"]]
    for pattern in DEFAULT_PATTERNS:
        assert any(re.search(pattern, sample) for sample in samples), pattern


# Copy-on-write.


def test_item_does_not_mutate_its_input() -> None:
    item = {
        "role": "user",
        "content": [
            {"type": "input_text", "text": "api_key=sk-abc123"},
            {"type": "input_text", "text": "nothing to see"},
        ],
        "meta": ("password=hunter2", 3, None, 1.5, True),
    }
    before = copy.deepcopy(item)
    redacted = REDACTOR.item(item)
    assert item == before
    assert redacted == {
        "role": "user",
        "content": [
            {"type": "input_text", "text": "api_key=<REDACTED>"},
            {"type": "input_text", "text": "nothing to see"},
        ],
        "meta": ("password=<REDACTED>", 3, None, 1.5, True),
    }
    assert redacted is not item and redacted["content"] is not item["content"]
    assert redacted["content"][1] is item["content"][1]


def test_values_without_secrets_come_back_as_the_same_object() -> None:
    item = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Deployed v2 in 41s.", "annotations": []}],
        "usage": {"input_tokens": 1200, "output_tokens": 88, "token": 5},
    }
    values: list[Any] = [item, [item, "plain"], ("a", 1), "plain", 42, None, 1.5]
    assert REDACTOR.item(item) is item
    for value in values:
        assert REDACTOR.value(value) is value


def test_tuples_stay_tuples_and_other_scalars_are_untouched() -> None:
    marker = object()
    redacted = REDACTOR.value(("token=abc", 7, marker, b"password=raw"))
    assert redacted == (f"token={R}", 7, marker, b"password=raw")
    assert isinstance(redacted, tuple)


def test_non_dict_mappings_become_dicts() -> None:
    proxy = MappingProxyType({"note": "password=hunter2"})
    assert REDACTOR.item(proxy) == {"note": f"password={R}"}
    assert type(REDACTOR.item(MappingProxyType({"note": "fine"}))) is dict


def test_string_values_under_secret_named_keys_are_redacted() -> None:
    fields = {
        "password": "hunter2",
        "OPENAI_API_KEY": "abc",
        "Authorization": "Basic dXNlcjpwYXNz",
        "client_secret": "s",
        "access_token": "t",
        "empty_password": "",
        "token": 5000,
        "max_tokens": "4096",
        "token_count": "12",
    }
    assert REDACTOR.value(fields) == {
        "password": R,
        "OPENAI_API_KEY": R,
        "Authorization": R,
        "client_secret": R,
        "access_token": R,
        "empty_password": "",
        "token": 5000,
        "max_tokens": "4096",
        "token_count": "12",
    }


def test_custom_patterns_replace_the_defaults_including_the_key_rule() -> None:
    redactor = Redactor([r"\b\d{3}-\d{2}-\d{4}\b"])
    value = {"password": "hunter2", "note": "ssn 123-45-6789, api_key=sk-abc123"}
    assert redactor.value(value) == {
        "password": "hunter2",
        "note": f"ssn {R}, api_key=sk-abc123",
    }


def test_event_gets_redacted_fields_and_the_original_is_unchanged() -> None:
    original = Event(
        "compact.archival",
        "sess-1",
        fields={"storage_adapter": "fs", "file_path": "/tmp/a", "note": "token: abc123"},
    )
    redacted = REDACTOR.event(original)
    assert original.fields["note"] == "token: abc123"
    assert redacted.fields == {**original.fields, "note": f"token: {R}"}
    assert (redacted.event, redacted.session_id, redacted.severity, redacted.ts) == (
        original.event,
        original.session_id,
        original.severity,
        original.ts,
    )
    clean = Event("compact.trigger_decision", "sess-1", fields={"t_est": 10, "max": 100})
    assert REDACTOR.event(clean) is clean


# Idempotence and properties.

SAMPLES = [c[1] for c in CASES] + list(PRIVATE_KEYS.values())
FRAGMENTS = [
    "password",
    "token",
    "api_key",
    "Authorization",
    "Bearer ",
    "=",
    ": ",
    '"',
    "'",
    "\\",
    "://",
    ":",
    "@",
    "--password ",
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----END RSA PRIVATE KEY-----",
    "sk-",
    "eyJ",
    "AKIA",
    "<REDACTED>",
    "(x)",
]
noise = st.text(alphabet=" \n\t:=\"'/@-_.,;{}[]()abcxyzPWD0123456789", max_size=12)
mixtures = st.lists(
    st.one_of(noise, st.sampled_from(SAMPLES), st.sampled_from(FRAGMENTS)), max_size=12
).map("".join)


@settings(max_examples=400, deadline=None)
@given(mixtures)
def test_text_redaction_is_idempotent(text: str) -> None:
    once = REDACTOR.text(text)
    assert REDACTOR.text(once) == once


# re's case-insensitive matching also maps these to ASCII letters (the prefilter must too).
_EXOTIC = ["\u0130", "\u0131", "\u017f", "\u212a", "PASSWORD", "ToKeN", "Api-Key", "BEARER"]


def _unfiltered(text: str) -> str:
    """Every default pattern applied in order, with no prefilter: what text() must equal."""
    plain = Redactor()
    for pattern, substitute, _stems in plain._rules:
        text = pattern.sub(substitute, text)
    return text


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.one_of(noise, st.sampled_from(SAMPLES), st.sampled_from(FRAGMENTS + _EXOTIC)),
        max_size=12,
    ).map("".join)
)
def test_the_stem_prefilter_never_skips_a_match(text: str) -> None:
    assert REDACTOR.text(text) == _unfiltered(text)
    assert REDACTOR.text("pa\u017fsword=hunter2-x") == "pa\u017fsword=" + R  # long s is an s


def _unfiltered_secrets(texts: list[str]) -> set[str]:
    """Every default pattern run on every text, with no prefilter: what secrets_in must find."""
    found: set[str] = set()
    for text in texts:
        for pattern, _substitute, _stems in REDACTOR._rules:
            names = [name for name in pattern.groupindex if name.startswith("secret")]
            for match in pattern.finditer(text):
                parts = [match.group(n) for n in names] if names else [match.group(0)]
                found.update(_bare_values(part) for part in parts if part)
    return {secret for secret in found if len(secret) >= 4}


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.lists(
            st.one_of(noise, st.sampled_from(SAMPLES), st.sampled_from(FRAGMENTS + _EXOTIC)),
            max_size=6,
        ).map("".join),
        max_size=8,
    )
)
def test_secrets_in_many_texts_finds_what_every_pattern_finds_in_each(texts: list[str]) -> None:
    """The candidate search over all texts joined (stems and token literals found with
    `find`) skips only texts no pattern matches in."""
    expected = _unfiltered_secrets(texts)
    assert REDACTOR.secrets_in(texts) == expected
    assert set().union(*(REDACTOR.secrets_in([text]) for text in texts)) == expected


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | mixtures,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(["text", "password", "content", "token", "n"]), children)
    ),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_value_redaction_is_idempotent_and_copy_on_write(value: Any) -> None:
    before = copy.deepcopy(value)
    once = REDACTOR.value(value)
    assert value == before
    assert REDACTOR.value(once) == once


SECRETS_IN_PROSE = [
    (f"api_key={OPENAI_KEY}", OPENAI_KEY),
    ("password: Hunter2!x", "Hunter2!x"),
    (f"Authorization: Bearer {JWT}", JWT),
    (GITHUB_PAT, GITHUB_PAT),
    (SLACK_BOT, SLACK_BOT),
    (GOOGLE_KEY, GOOGLE_KEY),
    (AWS_KEY_ID, AWS_KEY_ID),
    (f"aws_secret_access_key={AWS_SECRET}", AWS_SECRET),
    ("postgres://u:Pa55!word@h/db", "Pa55!word"),
    (PRIVATE_KEYS["ec"], pem_body(PRIVATE_KEYS["ec"])[1]),
]
prose = st.text(alphabet="abcdefghijklmnopqrstuvwxyz .,\n", max_size=40)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(prose, st.sampled_from(SECRETS_IN_PROSE)), min_size=1, max_size=5))
def test_secrets_embedded_in_prose_are_always_removed(
    parts: list[tuple[str, tuple[str, str]]],
) -> None:
    text = " ".join(f"{words} {sample} " for words, (sample, _) in parts)
    redacted = REDACTOR.text(text)
    for _, (_, secret) in parts:
        assert secret not in redacted


# Configuration: extra patterns, hook, replacement, disabled.


def test_extra_patterns_add_to_the_defaults() -> None:
    redactor = Redactor(
        extra_patterns=[r"\b\d{3}-\d{2}-\d{4}\b", re.compile(r"(?i)employee_id=(?P<secret>E\d+)")]
    )
    text = "ssn 123-45-6789 employee_id=E004211 api_key=sk-abc123"
    assert redactor.text(text) == f"ssn {R} employee_id={R} api_key={R}"


def test_hook_runs_after_the_patterns_on_every_string() -> None:
    seen: list[str] = []
    email = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+")

    def hook(text: str) -> str:
        seen.append(text)
        return email.sub("<EMAIL>", text)

    redactor = Redactor(hook=hook)
    item = {"content": ["mail alice@example.com", "api_key=sk-abc123"], "n": 1}
    assert redactor.item(item) == {"content": ["mail <EMAIL>", f"api_key={R}"], "n": 1}
    assert seen == ["mail alice@example.com", f"api_key={R}"]  # patterns ran first


def test_hook_alone_with_no_patterns() -> None:
    redactor = Redactor([], hook=str.upper)
    assert redactor.text("api_key=sk-abc123") == "API_KEY=SK-ABC123"


def test_custom_replacement_is_used_and_stable() -> None:
    redactor = Redactor(replacement="[hidden]")
    once = redactor.text(f"api_key=sk-abc123 {AWS_KEY_ID}")
    assert once == "api_key=[hidden] [hidden]"
    assert redactor.text(once) == once


def test_disabled_redactor_returns_inputs_untouched() -> None:
    calls: list[str] = []

    def hook(text: str) -> str:
        calls.append(text)
        return text

    redactor = Redactor(enabled=False, hook=hook)
    text = f"api_key=sk-abc123 {AWS_KEY_ID}"
    item = {"content": text, "password": "hunter2"}
    event = Event("compact.archival", "s", fields={"note": text})
    assert redactor.enabled is False
    assert redactor.text(text) is text
    assert redactor.value(item) is item
    assert redactor.item(item) is item
    assert redactor.event(event) is event
    assert calls == []
    assert Redactor().enabled is True


def test_redaction_disabled_event_shape() -> None:
    event = redaction_disabled_event("sess-9")
    payload = event.as_dict()
    assert (event.event, event.session_id, event.severity) == ("compact.warning", "sess-9", "high")
    assert payload["warning"] == "redaction_disabled"
    assert payload["redaction_enabled"] is False
    assert "secrets" in payload["message"]
    assert redaction_disabled_event().session_id is None
    assert event.row()["payload"] == payload


# Pattern validation and ReDoS.


def test_parse_patterns_compiles_and_passes_compiled_through() -> None:
    compiled = re.compile("x")
    parsed = parse_patterns([r"(?i)token\s*=\s*\S+", compiled])
    assert parsed[0].pattern == r"(?i)token\s*=\s*\S+"
    assert parsed[1] is compiled
    assert [p.pattern for p in parse_patterns(DEFAULT_PATTERNS)] == list(DEFAULT_PATTERNS)


def test_parse_patterns_names_the_bad_index_and_the_regex_error() -> None:
    with pytest.raises(ValueError, match=r"pattern 1 \('\(unclosed'\).*missing \)"):
        parse_patterns(["ok", "(unclosed", "[also bad"])
    with pytest.raises(ValueError, match="pattern 0"):
        Redactor(extra_patterns=["[abc"])


MB = 1_000_000
ADVERSARIAL: dict[str, Callable[[], str]] = {
    "letters": lambda: "a" * MB,
    "pem-headers-without-end": lambda: "-----BEGIN RSA PRIVATE KEY-----" * (MB // 31),
    "jwt-prefixes": lambda: "eyJa." * (MB // 5),
    "url-credentials-without-at": lambda: "x://u:" + "p:" * (MB // 2),
    "unterminated-quoted-secret": lambda: 'password: "' + "\\a" * (MB // 2),
    "keys-without-values": lambda: "api_key = " * (MB // 10),
    "bearer-without-digits": lambda: "bearer " + "a" * MB,
    "dashes": lambda: "-" * MB,
    "call-lookalike": lambda: "token=" + "a(" * (MB // 2),
}


@pytest.mark.parametrize("make", ADVERSARIAL.values(), ids=ADVERSARIAL.keys())
def test_a_megabyte_of_adversarial_input_is_fast(make: Callable[[], str]) -> None:
    text = make()
    started = time.process_time()
    REDACTOR.text(text)
    assert time.process_time() - started < 1.0


def test_secrets_in_finds_bare_values_and_scrub_removes_them_from_derived_text() -> None:
    redactor = Redactor()
    sources = [
        "deploy with password: Tr0ub4dor&3 tonight",
        "(aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY)",
    ]
    found = redactor.secrets_in(sources)
    assert {"Tr0ub4dor&3", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"} <= found
    summary = "- files: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n- note: Tr0ub4dor&3 rotates"
    scrubbed = redactor.scrub(summary, found)
    assert "wJalr" not in scrubbed and "Tr0ub4dor" not in scrubbed
    assert scrubbed == "- files: <REDACTED>\n- note: <REDACTED> rotates"
    assert Redactor(enabled=False).secrets_in(sources) == set()
