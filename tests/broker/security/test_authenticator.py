"""The per-connection authenticator: what passes before authentication, the answers to
SaslHandshake / SaslAuthenticate, the principal, and KIP-368 session expiry."""

from __future__ import annotations

from odradek.broker.principal import ANONYMOUS, KafkaPrincipal
from odradek.broker.security.authenticator import Authenticator
from odradek.broker.security.listeners import ListenerSecurity
from odradek.errors import ErrorCode
from odradek.protocol import ApiKey
from odradek.protocol.sasl import PlainClient, ScramClient, ScramCredential, ScramMechanism

SHA512 = ScramMechanism.SCRAM_SHA_512
CREDENTIALS = {("bob", SHA512): ScramCredential.from_password(SHA512, "bob-secret")}


def _listener(**extra: object) -> ListenerSecurity:
    fields: dict[str, object] = {
        "name": "SASL_PLAINTEXT",
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanisms": ("PLAIN", "SCRAM-SHA-512"),
        "plain_users": {"alice": "alice-secret"},
    }
    fields.update(extra)
    return ListenerSecurity(**fields)  # type: ignore[arg-type]


def _authenticator(**extra: object) -> Authenticator:
    return Authenticator(_listener(**extra), lambda user, m: CREDENTIALS.get((user, m)))


def test_only_api_versions_and_sasl_pass_before_authentication() -> None:
    auth = _authenticator()
    assert auth.allows(ApiKey.API_VERSIONS, 0)
    assert auth.allows(ApiKey.SASL_HANDSHAKE, 0)
    assert not auth.allows(ApiKey.METADATA, 0)
    assert not auth.allows(ApiKey.PRODUCE, 0)
    assert auth.principal == ANONYMOUS


def test_plain_authenticates_the_user() -> None:
    auth = _authenticator()
    assert auth.handshake("PLAIN").fields["error_code"] == ErrorCode.NONE
    step = auth.authenticate(PlainClient("alice", "alice-secret").first_token(), 0)
    assert step.fields["error_code"] == ErrorCode.NONE
    assert not step.close
    assert auth.principal == KafkaPrincipal("User", "alice")
    assert auth.allows(ApiKey.PRODUCE, 10**12)


def test_scram_authenticates_in_two_steps() -> None:
    auth = _authenticator()
    auth.handshake("SCRAM-SHA-512")
    client = ScramClient(SHA512, "bob", "bob-secret")
    step = auth.authenticate(client.first_token(), 0)
    assert not auth.authenticated
    final = client.receive(step.fields["auth_bytes"])
    assert final is not None
    step = auth.authenticate(final, 0)
    assert client.receive(step.fields["auth_bytes"]) is None
    assert auth.authenticated
    assert auth.principal == KafkaPrincipal("User", "bob")


def test_an_unknown_mechanism_is_answered_with_the_enabled_ones_then_closed() -> None:
    step = _authenticator().handshake("GSSAPI")
    assert step.fields["error_code"] == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert step.fields["mechanisms"] == ["PLAIN", "SCRAM-SHA-512"]
    assert step.close


def test_a_wrong_password_fails_and_closes() -> None:
    auth = _authenticator()
    auth.handshake("PLAIN")
    step = auth.authenticate(PlainClient("alice", "nope").first_token(), 0)
    assert step.fields["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert "Invalid username or password" in step.fields["error_message"]
    assert step.close
    assert not auth.authenticated


def test_authenticate_before_handshake_is_an_illegal_state() -> None:
    step = _authenticator().authenticate(b"x", 0)
    assert step.fields["error_code"] == ErrorCode.ILLEGAL_SASL_STATE
    assert step.close


def test_a_session_expires_after_connections_max_reauth_ms_and_can_be_renewed() -> None:
    auth = _authenticator(connections_max_reauth_ms=1000)
    auth.handshake("PLAIN")
    step = auth.authenticate(PlainClient("alice", "alice-secret").first_token(), 5000)
    assert step.fields["session_lifetime"] == 1000
    assert auth.allows(ApiKey.FETCH, 5999)
    assert not auth.allows(ApiKey.FETCH, 6000)
    assert auth.handshake("PLAIN").fields["error_code"] == ErrorCode.NONE  # re-authentication
    assert not auth.allows(ApiKey.FETCH, 6000)
    auth.authenticate(PlainClient("alice", "alice-secret").first_token(), 6000)
    assert auth.allows(ApiKey.FETCH, 6500)
    assert auth.reauthentications == 1


def test_re_authentication_cannot_change_the_principal() -> None:
    auth = _authenticator(connections_max_reauth_ms=1000, plain_users={"alice": "a", "carol": "c"})
    auth.handshake("PLAIN")
    auth.authenticate(PlainClient("alice", "a").first_token(), 0)
    auth.handshake("PLAIN")
    step = auth.authenticate(PlainClient("carol", "c").first_token(), 10)
    assert step.fields["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert step.close


def test_an_ssl_listener_lets_everything_through_with_the_certificate_principal() -> None:
    listener = ListenerSecurity("SSL", "SSL")
    auth = Authenticator(listener, lambda user, m: None, KafkaPrincipal("User", "CN=x"))
    assert auth.authenticated
    assert not auth.handles_sasl
    assert auth.allows(ApiKey.PRODUCE, 0)
    assert auth.principal == KafkaPrincipal("User", "CN=x")
