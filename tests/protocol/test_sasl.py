"""SASL mechanisms: RFC 7677's SCRAM-SHA-256 exchange byte for byte, both sides against each
other for both hashes, and the failures a broker must answer SASL_AUTHENTICATION_FAILED."""

from __future__ import annotations

import base64

import pytest

from odradek.errors import ErrorCode, KafkaError
from odradek.protocol.sasl import (
    PlainClient,
    PlainServer,
    ScramClient,
    ScramCredential,
    ScramMechanism,
    ScramServer,
    parse_plain_token,
)

# RFC 7677 section 3: user "user", password "pencil".
CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
SERVER_FIRST = f"r={CLIENT_NONCE}{SERVER_NONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
CLIENT_FINAL = (
    f"c=biws,r={CLIENT_NONCE}{SERVER_NONCE},p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
SERVER_FINAL = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
SHA256 = ScramMechanism.SCRAM_SHA_256


def _rfc_credential() -> ScramCredential:
    return ScramCredential.from_password(SHA256, "pencil", 4096, SALT)


def test_the_client_sends_rfc_7677s_messages() -> None:
    client = ScramClient(SHA256, "user", "pencil", nonce=lambda: CLIENT_NONCE)
    assert client.first_token() == f"n,,n=user,r={CLIENT_NONCE}".encode()
    assert client.receive(SERVER_FIRST.encode()) == CLIENT_FINAL.encode()
    assert client.receive(SERVER_FINAL.encode()) is None
    assert client.complete


def test_the_server_answers_rfc_7677s_messages() -> None:
    server = ScramServer(SHA256, {"user": _rfc_credential()}.get, nonce=lambda: SERVER_NONCE)
    assert server.receive(f"n,,n=user,r={CLIENT_NONCE}".encode()) == SERVER_FIRST.encode()
    assert server.receive(CLIENT_FINAL.encode()) == SERVER_FINAL.encode()
    assert server.complete
    assert server.authorization_id == "user"


@pytest.mark.parametrize("mechanism", list(ScramMechanism))
@pytest.mark.parametrize("user", ["alice", "o=dd,name"])
def test_client_and_server_agree(mechanism: ScramMechanism, user: str) -> None:
    credential = ScramCredential.from_password(mechanism, "s3cret", 4096)
    server = ScramServer(mechanism, {user: credential}.get)
    client = ScramClient(mechanism, user, "s3cret")
    token: bytes | None = client.first_token()
    while token is not None:
        token = client.receive(server.receive(token))
    assert server.complete
    assert client.complete
    assert server.authorization_id == user


def _fails(action: object, code: ErrorCode = ErrorCode.SASL_AUTHENTICATION_FAILED) -> str:
    assert callable(action)
    with pytest.raises(KafkaError) as info:
        action()
    assert info.value.error_code == code
    return str(info.value)


def test_a_wrong_password_fails_at_the_proof() -> None:
    server = ScramServer(SHA256, {"bob": ScramCredential.from_password(SHA256, "right")}.get)
    client = ScramClient(SHA256, "bob", "wrong")
    final = client.receive(server.receive(client.first_token()))
    assert final is not None
    message = _fails(lambda: server.receive(final))
    assert "invalid credentials" in message
    assert not server.complete


def test_an_unknown_user_fails_at_the_first_message() -> None:
    server = ScramServer(SHA256, {}.get)
    _fails(lambda: server.receive(b"n,,n=nobody,r=abc"))


def test_a_tampered_nonce_fails() -> None:
    server = ScramServer(SHA256, {"user": _rfc_credential()}.get, nonce=lambda: SERVER_NONCE)
    server.receive(f"n,,n=user,r={CLIENT_NONCE}".encode())
    _fails(lambda: server.receive(CLIENT_FINAL.replace("r=rOpr", "r=XOpr").encode()))


@pytest.mark.parametrize("token", [b"", b"garbage", b"p=tls-unique,,n=a,r=b", b"\xff\xfe"])
def test_malformed_client_first_messages_fail(token: bytes) -> None:
    server = ScramServer(SHA256, {"a": _rfc_credential()}.get)
    _fails(lambda: server.receive(token))


def test_a_message_after_completion_is_an_illegal_state() -> None:
    server = ScramServer(SHA256, {"user": _rfc_credential()}.get, nonce=lambda: SERVER_NONCE)
    server.receive(f"n,,n=user,r={CLIENT_NONCE}".encode())
    server.receive(CLIENT_FINAL.encode())
    _fails(lambda: server.receive(CLIENT_FINAL.encode()), ErrorCode.ILLEGAL_SASL_STATE)


def test_the_client_refuses_a_server_that_does_not_know_the_password() -> None:
    client = ScramClient(SHA256, "user", "pencil", nonce=lambda: CLIENT_NONCE)
    client.receive(SERVER_FIRST.encode())
    _fails(lambda: client.receive(b"v=" + base64.b64encode(b"x" * 32)))


def test_plain_accepts_the_right_password_only() -> None:
    users = {"alice": "alice-secret"}
    server = PlainServer(users)
    assert server.receive(PlainClient("alice", "alice-secret").first_token()) == b""
    assert server.authorization_id == "alice"
    _fails(lambda: PlainServer(users).receive(PlainClient("alice", "nope").first_token()))
    _fails(lambda: PlainServer(users).receive(PlainClient("bob", "alice-secret").first_token()))
    _fails(lambda: PlainServer(users).receive(b"bob\x00alice\x00alice-secret"))
    assert PlainServer(users).receive(b"alice\x00alice\x00alice-secret") == b""


@pytest.mark.parametrize(
    "token", [b"", b"a\x00b", b"\x00\x00pw", b"\x00user\x00", b"\xff\x00a\x00b"]
)
def test_malformed_plain_tokens_fail(token: bytes) -> None:
    _fails(lambda: parse_plain_token(token))
