"""SASL mechanisms as Kafka speaks them: PLAIN (RFC 4616) and SCRAM-SHA-256/512 (RFC 5802,
RFC 7677), both sides, sans-I/O.

Each side is a small state machine: tokens in, tokens out, no sockets and no clock. The broker
drives ``PlainServer`` / ``ScramServer`` from SaslAuthenticate requests; odradek's client drives
``PlainClient`` / ``ScramClient`` from the responses. A failed exchange raises ``KafkaError``
with SASL_AUTHENTICATION_FAILED (the code Kafka answers with) or ILLEGAL_SASL_STATE.

SCRAM in brief (what ``ScramCredential`` stores and the proof checks)::

    SaltedPassword  = PBKDF2-HMAC-H(password, salt, iterations)
    ClientKey       = HMAC(SaltedPassword, "Client Key");   StoredKey = H(ClientKey)
    ServerKey       = HMAC(SaltedPassword, "Server Key")
    AuthMessage     = client-first-bare "," server-first "," client-final-without-proof
    ClientProof     = ClientKey XOR HMAC(StoredKey, AuthMessage)
    ServerSignature = HMAC(ServerKey, AuthMessage)

The server keeps only (salt, StoredKey, ServerKey, iterations), never the password. Kafka's
SCRAM has one extension in client-first (``tokenauth``, delegation tokens), which is refused.
"""

from __future__ import annotations

import base64
import enum
import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from odradek.errors import ErrorCode, KafkaError

__all__ = [
    "PLAIN",
    "PlainClient",
    "PlainServer",
    "ScramClient",
    "ScramCredential",
    "ScramMechanism",
    "ScramServer",
    "authentication_failed",
    "parse_plain_token",
]

PLAIN = "PLAIN"


def authentication_failed(message: str) -> KafkaError:
    return KafkaError(message, code=ErrorCode.SASL_AUTHENTICATION_FAILED)


# --- PLAIN ---------------------------------------------------------------------------------


def parse_plain_token(token: bytes) -> tuple[str, str, str]:
    """Splits ``authzid NUL authcid NUL password`` (RFC 4616).

    Raises:
        KafkaError: SASL_AUTHENTICATION_FAILED for a malformed token.
    """
    parts = token.split(b"\x00")
    if len(parts) != 3:
        raise authentication_failed("Invalid SASL/PLAIN response: expected 3 tokens")
    try:
        authzid, username, password = (part.decode("utf-8") for part in parts)
    except UnicodeDecodeError:
        raise authentication_failed("Invalid SASL/PLAIN response: not UTF-8") from None
    if not username:
        raise authentication_failed("Authentication failed: username not specified")
    if not password:
        raise authentication_failed("Authentication failed: password not specified")
    return authzid, username, password


class PlainServer:
    """The broker's side of PLAIN: one token, checked against ``users`` (name → password).

    ``authorization_id`` (the user) is set once ``receive`` returned.
    """

    mechanism = PLAIN

    def __init__(self, users: dict[str, str]) -> None:
        self._users = users
        self.authorization_id: str | None = None

    @property
    def complete(self) -> bool:
        return self.authorization_id is not None

    def receive(self, token: bytes) -> bytes:
        """Checks the client's only token; returns the (empty) answer.

        Raises:
            KafkaError: SASL_AUTHENTICATION_FAILED for a malformed token, an unknown user, a
                wrong password or an authorization id other than the user;
                ILLEGAL_SASL_STATE for a second token.
        """
        if self.complete:
            raise KafkaError("PLAIN takes one token", code=ErrorCode.ILLEGAL_SASL_STATE)
        authzid, username, password = parse_plain_token(token)
        expected = self._users.get(username)
        if expected is None or not hmac.compare_digest(
            expected.encode("utf-8"), password.encode("utf-8")
        ):
            raise authentication_failed("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise authentication_failed(
                "Authentication failed: Client requested an authorization id that is different "
                "from username"
            )
        self.authorization_id = username
        return b""


class PlainClient:
    """The client's side of PLAIN: one token out, an empty one back."""

    mechanism = PLAIN

    def __init__(self, username: str, password: str) -> None:
        self._token = b"\x00" + username.encode("utf-8") + b"\x00" + password.encode("utf-8")
        self.complete = False

    def first_token(self) -> bytes:
        return self._token

    def receive(self, token: bytes) -> bytes | None:
        """The server's answer; ``None``: nothing more to send."""
        self.complete = True
        return None


# --- SCRAM ---------------------------------------------------------------------------------


class ScramMechanism(enum.Enum):
    """The SCRAM mechanisms Kafka supports, with Kafka's type ids (AlterUserScramCredentials'
    ``mechanism``) and minimum iteration count."""

    SCRAM_SHA_256 = ("SCRAM-SHA-256", "sha256", 1)
    SCRAM_SHA_512 = ("SCRAM-SHA-512", "sha512", 2)

    @property
    def mechanism_name(self) -> str:
        return self.value[0]

    @property
    def hash_name(self) -> str:
        return self.value[1]

    @property
    def type_id(self) -> int:
        return self.value[2]

    #: Kafka's bounds on a credential's iterations (ScramMechanism.minIterations, and the
    #: maximum AlterUserScramCredentials accepts).
    @property
    def min_iterations(self) -> int:
        return 4096

    @property
    def max_iterations(self) -> int:
        return 16384

    @classmethod
    def by_name(cls, name: str) -> ScramMechanism | None:
        for mechanism in cls:
            if mechanism.mechanism_name == name:
                return mechanism
        return None

    @classmethod
    def by_type_id(cls, type_id: int) -> ScramMechanism | None:
        for mechanism in cls:
            if mechanism.type_id == type_id:
                return mechanism
        return None

    def digest(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()

    def hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self.hash_name).digest()

    def salted_password(self, password: str, salt: bytes, iterations: int) -> bytes:
        return hashlib.pbkdf2_hmac(self.hash_name, _normalize(password), salt, iterations)


def _normalize(password: str) -> bytes:
    # Kafka uses the password's UTF-8 bytes without SASLprep; so do we, to derive the same keys.
    return password.encode("utf-8")


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """What the server stores for one user and mechanism."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    @classmethod
    def from_salted_password(
        cls, mechanism: ScramMechanism, salted_password: bytes, salt: bytes, iterations: int
    ) -> ScramCredential:
        client_key = mechanism.hmac(salted_password, b"Client Key")
        return cls(
            salt=salt,
            stored_key=mechanism.digest(client_key),
            server_key=mechanism.hmac(salted_password, b"Server Key"),
            iterations=iterations,
        )

    @classmethod
    def from_password(
        cls,
        mechanism: ScramMechanism,
        password: str,
        iterations: int = 4096,
        salt: bytes | None = None,
    ) -> ScramCredential:
        salt = secrets.token_bytes(32) if salt is None else salt
        salted = mechanism.salted_password(password, salt, iterations)
        return cls.from_salted_password(mechanism, salted, salt, iterations)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise authentication_failed("Invalid SCRAM message: bad base64") from None


def _escape_name(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _unescape_name(text: str) -> str:
    if "=" in text.replace("=3D", "").replace("=2C", ""):
        raise authentication_failed("Invalid SCRAM message: bad escape in user name")
    return text.replace("=2C", ",").replace("=3D", "=")


def _attributes(message: str, expected: str) -> dict[str, str]:
    """``a=value,b=value`` in the order ``expected`` names (extra trailing ones allowed)."""
    fields: dict[str, str] = {}
    parts = message.split(",")
    if len(parts) < len(expected):
        raise authentication_failed(f"Invalid SCRAM message: {message!r}")
    for key, part in zip(expected, parts, strict=False):
        if len(part) < 2 or part[0] != key or part[1] != "=":
            raise authentication_failed(f"Invalid SCRAM message: expected {key}= in {message!r}")
        fields[key] = part[2:]
    for part in parts[len(expected) :]:
        fields.setdefault(part[:1], part[2:])
    return fields


def _nonce() -> str:
    return secrets.token_urlsafe(24)


class ScramServer:
    """The broker's side of one SCRAM exchange: client-first → server-first, client-final →
    server-final.

    Args:
        mechanism: SCRAM-SHA-256 or SCRAM-SHA-512.
        lookup: the stored credential of a user for this mechanism (None: no such user).
        nonce: the server nonce's source (random; fixed in tests).
    """

    def __init__(
        self,
        mechanism: ScramMechanism,
        lookup: Callable[[str], ScramCredential | None],
        nonce: Callable[[], str] = _nonce,
    ) -> None:
        self.mechanism_kind = mechanism
        self.mechanism = mechanism.mechanism_name
        self._lookup = lookup
        self._nonce = nonce
        self._state = "first"
        self._client_first_bare = ""
        self._server_first = ""
        self._credential: ScramCredential | None = None
        self._gs2_header = ""
        self.authorization_id: str | None = None

    @property
    def complete(self) -> bool:
        return self._state == "complete"

    def receive(self, token: bytes) -> bytes:
        """Takes the client's next message and returns the server's answer.

        Raises:
            KafkaError: SASL_AUTHENTICATION_FAILED for a malformed message, an unknown user or
                a wrong proof; ILLEGAL_SASL_STATE after the exchange completed.
        """
        try:
            message = token.decode("utf-8")
        except UnicodeDecodeError:
            raise authentication_failed("Invalid SCRAM message: not UTF-8") from None
        if self._state == "first":
            return self._client_first(message).encode("utf-8")
        if self._state == "final":
            return self._client_final(message).encode("utf-8")
        raise KafkaError("SCRAM exchange already complete", code=ErrorCode.ILLEGAL_SASL_STATE)

    def _client_first(self, message: str) -> str:
        gs2, sep, rest = message.partition(",")
        authzid, sep2, bare = rest.partition(",")
        if not sep or not sep2 or gs2 not in ("n", "y"):
            raise authentication_failed("Invalid SCRAM client-first message (channel binding)")
        fields = _attributes(bare, "nr")
        username = _unescape_name(fields["n"])
        if "tokenauth" in bare:
            raise authentication_failed("Authentication failed: delegation tokens unsupported")
        if authzid and authzid != f"a={fields['n']}":
            raise authentication_failed(
                "Authentication failed: Client requested an authorization id that is different "
                "from username"
            )
        credential = self._lookup(username)
        if credential is None:
            raise authentication_failed("Authentication failed: Invalid user credentials")
        if not fields["r"]:
            raise authentication_failed("Invalid SCRAM client-first message: empty nonce")
        self._credential = credential
        self.authorization_id = username
        self._gs2_header = f"{gs2},{authzid},"
        self._client_first_bare = bare
        nonce = fields["r"] + self._nonce()
        self._server_first = f"r={nonce},s={_b64(credential.salt)},i={credential.iterations}"
        self._state = "final"
        return self._server_first

    def _client_final(self, message: str) -> str:
        fields = _attributes(message, "cr")
        proof_at = message.rfind(",p=")
        if proof_at < 0:
            raise authentication_failed("Invalid SCRAM client-final message: no proof")
        without_proof = message[:proof_at]
        proof = _unb64(message[proof_at + 3 :])
        if _unb64(fields["c"]) != self._gs2_header.encode("utf-8"):
            raise authentication_failed("Invalid SCRAM client-final message: channel binding")
        # Kafka only checks that the nonce ends with the combined one (librdkafka before 2.1
        # sends the client nonce twice), and so do we; the proof covers what was sent.
        if not fields["r"].endswith(self._server_first[2 : self._server_first.index(",")]):
            raise authentication_failed("Invalid SCRAM client-final message: nonce mismatch")
        credential = self._credential
        assert credential is not None
        mechanism = self.mechanism_kind
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}"
        signature = mechanism.hmac(credential.stored_key, auth_message.encode("utf-8"))
        if len(proof) != len(signature):
            raise authentication_failed("Authentication failed: Invalid client proof")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(mechanism.digest(client_key), credential.stored_key):
            self._state = "failed"
            raise authentication_failed(
                "Authentication failed during authentication due to invalid credentials with "
                f"SASL mechanism {self.mechanism}"
            )
        server_signature = mechanism.hmac(credential.server_key, auth_message.encode("utf-8"))
        self._state = "complete"
        return f"v={_b64(server_signature)}"


class ScramClient:
    """The client's side of one SCRAM exchange (odradek's client, and tests).

    Call ``first_token``, then ``receive`` with each server message until it returns ``None``.
    """

    def __init__(
        self,
        mechanism: ScramMechanism,
        username: str,
        password: str,
        nonce: Callable[[], str] = _nonce,
    ) -> None:
        self.mechanism_kind = mechanism
        self.mechanism = mechanism.mechanism_name
        self._password = password
        self._client_nonce = nonce()
        self._client_first_bare = f"n={_escape_name(username)},r={self._client_nonce}"
        self._server_signature = b""
        self._state = "first"
        self.complete = False

    def first_token(self) -> bytes:
        return f"n,,{self._client_first_bare}".encode()

    def receive(self, token: bytes) -> bytes | None:
        """The server's next message; returns the client's answer (``None``: done).

        Raises:
            KafkaError: SASL_AUTHENTICATION_FAILED when the server's messages are malformed,
                its nonce does not extend ours, or its signature is wrong (a fake server).
        """
        message = token.decode("utf-8", errors="replace")
        if self._state == "first":
            return self._server_first(message).encode("utf-8")
        if self._state == "final":
            self._server_final(message)
            return None
        raise KafkaError("SCRAM exchange already complete", code=ErrorCode.ILLEGAL_SASL_STATE)

    def _server_first(self, message: str) -> str:
        if message.startswith("e="):
            raise authentication_failed(f"SCRAM server error: {message[2:]}")
        fields = _attributes(message, "rsi")
        nonce = fields["r"]
        if not nonce.startswith(self._client_nonce) or nonce == self._client_nonce:
            raise authentication_failed("SCRAM server nonce does not extend the client's")
        try:
            iterations = int(fields["i"])
        except ValueError:
            raise authentication_failed("SCRAM server sent a bad iteration count") from None
        mechanism = self.mechanism_kind
        salted = mechanism.salted_password(self._password, _unb64(fields["s"]), iterations)
        client_key = mechanism.hmac(salted, b"Client Key")
        stored_key = mechanism.digest(client_key)
        without_proof = f"c={_b64(b'n,,')},r={nonce}"
        auth_message = f"{self._client_first_bare},{message},{without_proof}".encode()
        signature = mechanism.hmac(stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = mechanism.hmac(salted, b"Server Key")
        self._server_signature = mechanism.hmac(server_key, auth_message)
        self._state = "final"
        return f"{without_proof},p={_b64(proof)}"

    def _server_final(self, message: str) -> None:
        if message.startswith("e="):
            raise authentication_failed(f"SCRAM server error: {message[2:]}")
        fields = _attributes(message, "v")
        if not hmac.compare_digest(_unb64(fields["v"]), self._server_signature):
            raise authentication_failed("SCRAM server signature is invalid")
        self._state = "complete"
        self.complete = True
