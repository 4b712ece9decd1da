"""``mmd.screen.secrets``: every kind of secret found by kind, line and span, redacted stably; the negatives are not."""

from __future__ import annotations

import pytest

from mmd.screen.secrets import KINDS, MARKER_RE, PATTERNS, find_secrets, marker, redact

# One line per kind (provider formats, never real credentials): the line ({} for the value) and the value the
# finding must cover exactly.
SECRETS = [
    ("openai key", "use {} here",
     "sk-proj-Ab3dEf6hIj9kLmNoPqRsTuVwXyZ0123456789abcdEFGHijklMNOPqrstUVWXyz012345"),
    ("openai key", "legacy key {}",
     "sk-Zx8qLm3Pw9Rt5Yv2Nb7Kc4Hd6Jf1Gs0QaWeRtYuIoPAs1Df2"),
    ("anthropic key", "ANTHROPIC_API_KEY={}",
     "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AbCdEfGh-AAAA"),
    ("github token", "push with {} please",
     "ghp_16C7e42F292c6912E7710c838347Ae178B4a"),
    ("github token", "oauth {}",
     "gho_16C7e42F292c6912E7710c838347Ae178B4a"),
    ("github token", "app {}",
     "ghs_16C7e42F292c6912E7710c838347Ae178B4a"),
    ("github token", "fine-grained {}",
     "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"),
    ("aws access key", "the key id is {} for staging",
     "AKIA4XKQ7RZP2MBN6TWD"),
    ("aws secret key", "aws secret {}",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("slack token", "bot {}",
     "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"),
    ("slack webhook", "post to {} now",
     "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"),
    ("stripe key", "stripe {}",
     "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    ("stripe key", "test mode {}",
     "sk_test_4eC39HqLyjWDarjtT1zdp7dc"),
    ("google api key", "maps {}",
     "AIzaSyA-1234567890abcdefghijklmnopqrstu"),
    ("jwt", "Bearer {}",
     "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlF"),
    ("private key", "{}\n",
     "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"),
    ("url password", "db at https://admin:{}@db.example.com/app",
     "s3cr3tP4ss"),
    ("password", "mm: the staging db password is {}",
     "hunter2"),
    ("password", "The password for the admin account is {}.",
     "swordfish"),
    ('password', 'DB_PASSWORD="{}"',
     'correct-horse-battery'),
    ("password", "staging 密码是 {}，别外传",
     "hunter22"),
    ("secret", "the api key is {}",
     "9f8e7d6c5b4a39281706"),
    ("secret", "client_secret: {}",
     "Q2xpZW50U2VjcmV0OTk5"),
    ("high-entropy token", "export X={}",
     "Zx8qLm3Pw9Rt5Yv2Nb7Kc4Hd6Jf1Gs0QaWeRtYuIoP"),
    # from detect-secrets' provider plugins
    ("gitlab token", "ci token {}",
     "glpat-AbCdEf0123456789xyzw"),
    ("sendgrid key", "{}",
     "SG.abcdefghij0123456789uv.abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG"),
]

NEGATIVES = [
    "commit 3f15701a9c2e4b1d8e6f0a7b5c3d2e1f0a9b8c7d refactor: twin_entries lives in mmd.core.format",
    "a3f48f0 (HEAD -> main) merge h-trust",
    "request 123e4567-e89b-12d3-a456-426614174000 failed",
    'sha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"',
    'pkg==1.2.3 --hash=sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    '"integrity": "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg=="',
    "![dot](data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5Erk)",
    "logo: iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
    "Remember to rotate the password every month.",
    "The password is stored in the vault.",
    "the password is available through the secrets manager, never in the repo",
    "password: see the vault",
    "Failed changing the password: primary unit down",
    "the token is refreshed hourly by the cron job",
    "const token = useAuthStore.getState().token",
    "DB_PASSWORD=${DB_PASSWORD}",
    "POSTGRES_PASSWORD: ${POSTGRES_PASSWORD:-postgres}",
    "POSTGRES_USER=postgres\nPOSTGRES_PASSWORD=postgres",
    "store_pwd=STORE_PASSWORD,",
    "add a comment at the STORE_PASSWORD line indicating the issue.",
    "postgresql://postgres:postgres@localhost:5432/app",
    "postgresql://user:password@host/db",
    "see /usr/lib/python3.11/site-packages/detect_secrets/plugins/base.py",
    "ThisIsAVeryLongIdentifierNameForTesting123Foo and test_undo_deletes_a_created_note_restores_a_replaced_one",
    "toolUseID toolu_bdrk_01GJ2Bu2kkpNAkWCM7nhw37h and msg_011pSyKrzbadXh758FauDc8w",
    "我忘了密码，请重置。",
]


@pytest.mark.parametrize(("kind", "text", "value"), SECRETS, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(SECRETS)])
def test_each_kind_is_found_with_its_line_and_the_span_of_its_value(kind: str, text: str, value: str) -> None:
    text = "first line\n" + text.format(value)
    found = find_secrets(text)
    assert [(f.kind, text[f.start:f.end], f.line) for f in found] == [(kind, value, 2)]
    assert value not in redact(text) and marker(kind) in redact(text)


@pytest.mark.parametrize("text", NEGATIVES)
def test_hashes_uuids_images_paths_ids_and_prose_are_not_secrets(text: str) -> None:
    assert find_secrets(text) == []
    assert redact(text) == text


def test_every_pattern_of_the_table_has_a_positive_example() -> None:
    assert {k for k, _, _, _ in PATTERNS} | {"high-entropy token"} <= {k for k, _, _ in SECRETS}
    assert set(KINDS) <= {k for k, _, _ in SECRETS}


def test_redaction_is_stable_and_idempotent_and_never_found_again() -> None:
    text = "\n".join(t.format(v) for _, t, v in SECRETS)
    once = redact(text)
    assert redact(once) == once == redact(text)
    assert find_secrets(once) == []
    assert len(MARKER_RE.findall(once)) == len(find_secrets(text))
    for _, _, value in SECRETS:
        assert value not in once


def test_several_secrets_on_several_lines_are_each_reported_in_order() -> None:
    text = ("mm: keys for staging\nid AKIA4XKQ7RZP2MBN6TWD\nand ghp_16C7e42F292c6912E7710c838347Ae178B4a"
            " then the staging db password is hunter2")
    found = find_secrets(text)
    assert [(f.kind, f.line) for f in found] == [("aws access key", 2), ("github token", 3), ("password", 3)]
    assert [f.to_json()["kind"] for f in found] == ["aws access key", "github token", "password"]
    assert all(set(f.to_json()) == {"kind", "line", "start", "end"} for f in found)


def test_an_unfinished_private_key_block_is_redacted_to_the_end() -> None:
    text = "paste:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\nmore"
    assert redact(text) == "paste:\n‹secret: private key›"
