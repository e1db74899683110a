"""``SessionStore``: the console's logged-in users when the broker's listener is SASL_*.

A user logs in with the broker's own SASL credentials: the store authenticates to the broker
with them (the mechanism and the TLS settings of the console's command config, only the
username and password replaced) and, when the broker accepts, keeps a ``ConsoleService`` of
that user's own — an admin client and a simple consumer logged in as the user — so the broker's
ACLs decide what each user sees and may change. The console holds no password after the login.

The browser holds only a session id in a cookie: 32 random bytes and an HMAC-SHA256 of them
under a key made when the store is (a session holds live clients, so none outlives the process
and a key given from outside would buy nothing). A cookie whose signature does not match, or
whose session ended, is no session. A session ends on logout, after ``idle_timeout_ms`` without
a request (checked on every lookup, whose clock is injected), or when the store is closed; its
clients are closed then.

Thread-safety: every method may be called from any thread (one lock).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from odradek._clock import SYSTEM_CLOCK, Clock
from odradek.client.admin import AdminClient
from odradek.client.closeable import Closeable
from odradek.client.connection import LOGIN_ERRORS
from odradek.console.inputs import ConsoleInputError
from odradek.console.service import ConsoleService
from odradek.errors import KafkaError

__all__ = ["ConsoleLoginError", "Session", "SessionStore", "needs_login"]

#: Idle time after which a session ends: 30 minutes.
DEFAULT_IDLE_TIMEOUT_MS: Final = 30 * 60 * 1000
#: The longest wait for the broker's answer to a login.
LOGIN_TIMEOUT_MS: Final = 10_000
#: Settings of the console's own login that a user's login replaces.
_OWN_LOGIN: Final = ("sasl.username", "sasl.password", "sasl.jaas.config")


class ConsoleLoginError(ConsoleInputError):
    """The broker refused the username and password (or they were empty)."""


def needs_login(settings: Mapping[str, Any]) -> bool:
    """Whether the console's connection settings name a SASL listener (SASL_PLAINTEXT or
    SASL_SSL), whose users then log in to the console."""
    return str(settings.get("security.protocol", "")).upper().startswith("SASL_")


@dataclass(slots=True)
class Session:
    """One logged-in user and the clients that act as them."""

    user: str
    service: ConsoleService
    last_used_ms: int = field(compare=False)


class SessionStore(Closeable):
    """Logged-in users by session (see the module docstring).

    Args:
        bootstrap_servers: ``host:port[,...]``.
        settings: the console's own client settings (security.protocol, ssl.*, sasl.mechanism).
        idle_timeout_ms: a session unused this long ends.
        clock: the time source of the idle timeout.
        open_service: makes a user's service from client settings (tests pass a fake).
    """

    def __init__(
        self,
        bootstrap_servers: str,
        settings: Mapping[str, Any],
        *,
        idle_timeout_ms: int = DEFAULT_IDLE_TIMEOUT_MS,
        clock: Clock = SYSTEM_CLOCK,
        open_service: Callable[[str, Mapping[str, Any]], ConsoleService] | None = None,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self._settings = {k: v for k, v in settings.items() if k not in _OWN_LOGIN}
        self._idle_timeout_ms = idle_timeout_ms
        self._clock = clock
        self._open_service = open_service or _open_service
        self._key = secrets.token_bytes(32)
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    @property
    def mechanism(self) -> str:
        """The SASL mechanism users log in with (the console's ``sasl.mechanism``)."""
        value = self._settings.get("sasl.mechanism") or self._settings.get("sasl.mechanisms")
        return str(value or "PLAIN").upper()

    def login(self, username: str, password: str) -> str:
        """Authenticates to the broker as ``username`` and opens their session.

        Returns:
            The cookie value naming the session.

        Raises:
            ConsoleLoginError: an empty field, or the broker refused the login.
            KafkaError: the broker could not be reached.
        """
        if not username or not password:
            raise ConsoleLoginError("give a username and a password")
        settings = {
            **self._settings,
            "sasl.mechanism": self.mechanism,
            "sasl.username": username,
            "sasl.password": password,
        }
        settings.pop("sasl.mechanisms", None)
        check = AdminClient(
            {
                **settings,
                "bootstrap.servers": self.bootstrap_servers,
                "client.id": "odradek-console-login",
                "default.api.timeout.ms": LOGIN_TIMEOUT_MS,
            },
            bootstrap_fail_fast=True,
        )
        try:
            check.describe_cluster(timeout_ms=LOGIN_TIMEOUT_MS)
        except KafkaError as error:
            if error.error_code in LOGIN_ERRORS:
                raise ConsoleLoginError(
                    f"the broker refused the login of {username!r} ({self.mechanism}): "
                    "wrong username or password"
                ) from None
            if error.error_code.name != "CLUSTER_AUTHORIZATION_FAILED":
                raise  # authenticated but not allowed to describe the cluster: still logged in
        finally:
            check.close()
        service = self._open_service(self.bootstrap_servers, settings)
        session_id = secrets.token_urlsafe(32)
        with self._lock:
            self._sessions[session_id] = Session(username, service, self._clock.monotonic_ms())
        return f"{session_id}.{self._sign(session_id)}"

    def get(self, cookie: str | None) -> Session | None:
        """The live session the cookie names (its idle time restarted), else None."""
        session_id = self._verified(cookie)
        expired: list[Session] = []
        now_ms = self._clock.monotonic_ms()
        with self._lock:
            for key, session in list(self._sessions.items()):
                if now_ms - session.last_used_ms >= self._idle_timeout_ms:
                    expired.append(self._sessions.pop(key))
            found = self._sessions.get(session_id) if session_id is not None else None
            if found is not None:
                found.last_used_ms = now_ms
        for session in expired:
            session.service.close()
        return found

    def logout(self, cookie: str | None) -> None:
        """Ends the session the cookie names (nothing when none) and closes its clients."""
        session_id = self._verified(cookie)
        if session_id is None:
            return
        with self._lock:
            session = self._sessions.pop(session_id, None)
        if session is not None:
            session.service.close()

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def close(self) -> None:
        with self._lock:
            sessions = list(self._sessions.values())
            self._sessions.clear()
        for session in sessions:
            session.service.close()

    def _sign(self, session_id: str) -> str:
        return hmac.new(self._key, session_id.encode(), hashlib.sha256).hexdigest()

    def _verified(self, cookie: str | None) -> str | None:
        if not cookie:
            return None
        session_id, _, signature = cookie.rpartition(".")
        if not session_id or not hmac.compare_digest(signature, self._sign(session_id)):
            return None
        return session_id


def _open_service(bootstrap_servers: str, settings: Mapping[str, Any]) -> ConsoleService:
    return ConsoleService(bootstrap_servers, settings=settings)
