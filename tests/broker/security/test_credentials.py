"""SCRAM credentials in the metadata store: Kafka's text form, conditional updates that keep
the other keys of ``/config/users/<user>`` (quotas)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from odradek.broker.security.credentials import (
    ScramCredentialStore,
    format_credential,
    parse_credential,
    sanitize,
)
from odradek.controller.local import LocalMetadataStore
from odradek.protocol.sasl import ScramCredential, ScramMechanism

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512


@pytest.fixture
def store(tmp_path: Path) -> ScramCredentialStore:
    return ScramCredentialStore(LocalMetadataStore(tmp_path / "metadata.json"))


def test_the_text_form_round_trips() -> None:
    credential = ScramCredential.from_password(SHA256, "pw", 4096, b"salt")
    text = format_credential(credential)
    assert text.startswith("salt=c2FsdA==,stored_key=")
    assert text.endswith(",iterations=4096")
    assert parse_credential(text) == credential
    with pytest.raises(ValueError, match="malformed"):
        parse_credential("salt=c2FsdA==,iterations=x")


def test_upsert_describe_delete(store: ScramCredentialStore) -> None:
    credential = ScramCredential.from_password(SHA512, "pw", 8192)
    store.alter("bob", {SHA512: credential, SHA256: ScramCredential.from_password(SHA256, "p")})
    assert store.credential("bob", SHA512) == credential
    assert store.describe("bob") == {SHA256: 4096, SHA512: 8192}
    assert store.users() == ["bob"]
    store.alter("bob", {}, frozenset({SHA256}))
    assert store.describe("bob") == {SHA512: 8192}
    assert store.credential("bob", SHA256) is None
    assert store.credential("nobody", SHA256) is None


def test_other_keys_of_the_user_config_are_kept(tmp_path: Path) -> None:
    metadata = LocalMetadataStore(tmp_path / "metadata.json")
    path = f"/config/users/{sanitize('a user')}"
    assert path == "/config/users/a%20user"
    metadata.create(
        path, json.dumps({"version": 1, "config": {"producer_byte_rate": "1024"}}).encode(),
        make_parents=True,
    )  # fmt: skip
    ScramCredentialStore(metadata).alter(
        "a user", {SHA256: ScramCredential.from_password(SHA256, "x")}
    )
    config = json.loads(metadata.get(path)[0])["config"]
    assert config["producer_byte_rate"] == "1024"
    assert config["SCRAM-SHA-256"].startswith("salt=")


@pytest.mark.parametrize("user", ["", ".", ".."])
def test_a_user_name_no_node_can_have_has_no_credentials(tmp_path: Path, user: str) -> None:
    """The fuzzer's DescribeUserScramCredentials for such names raised in the handler."""
    store = ScramCredentialStore(LocalMetadataStore(str(tmp_path)))
    assert store.describe(user) == {}
