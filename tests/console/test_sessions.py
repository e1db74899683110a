"""``console.sessions.SessionStore`` against a SASL_PLAINTEXT listener of an embedded broker: the
login is the broker's (PLAIN and SCRAM), each session's service is opened with the user's
credentials and closed on logout, on idle expiry (a mock clock) and on close; a cookie whose
signature does not match names no session."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from odradek import Broker
from odradek._clock import MockClock
from odradek.console.sessions import (
    DEFAULT_IDLE_TIMEOUT_MS,
    ConsoleLoginError,
    SessionStore,
    needs_login,
)
from odradek.testing.certificates import make_certificates
from odradek.testing.secure_broker import (
    PLAIN_PASSWORD,
    PLAIN_USER,
    SCRAM_PASSWORD,
    SCRAM_USER,
    add_scram_user,
    broker_settings,
)


class FakeService:
    def __init__(self, settings: Mapping[str, Any]) -> None:
        self.settings = dict(settings)
        self.closed = False

    def close(self) -> None:
        self.closed = True


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    certificates = make_certificates(tmp_path_factory.mktemp("certificates"))
    with Broker(config=broker_settings(certificates)) as broker:
        add_scram_user(broker)
        yield f"127.0.0.1:{broker.listener_port('SASL_PLAINTEXT')}"


def store(
    bootstrap: str, clock: MockClock, mechanism: str = "PLAIN"
) -> tuple[SessionStore, list[FakeService]]:
    opened: list[FakeService] = []

    def open_service(_bootstrap: str, settings: Mapping[str, Any]) -> Any:
        opened.append(FakeService(settings))
        return opened[-1]

    console_login = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": "admin",
        "sasl.password": "admin-secret",
    }
    return SessionStore(bootstrap, console_login, clock=clock, open_service=open_service), opened


def test_needs_login_only_for_sasl_listeners() -> None:
    assert needs_login({"security.protocol": "sasl_ssl"})
    assert needs_login({"security.protocol": "SASL_PLAINTEXT"})
    assert not needs_login({"security.protocol": "SSL"})
    assert not needs_login({})


def test_a_session_acts_as_its_user_and_ends_when_idle(bootstrap: str) -> None:
    clock = MockClock()
    sessions, opened = store(bootstrap, clock)
    cookie = sessions.login(PLAIN_USER, PLAIN_PASSWORD)
    [service] = opened
    assert service.settings["sasl.username"] == PLAIN_USER
    assert service.settings["sasl.password"] == PLAIN_PASSWORD
    assert service.settings["sasl.mechanism"] == "PLAIN"
    clock.advance(DEFAULT_IDLE_TIMEOUT_MS - 1)
    found = sessions.get(cookie)
    assert found is not None
    assert found.user == PLAIN_USER  # and its idle time restarted
    clock.advance(DEFAULT_IDLE_TIMEOUT_MS - 1)
    assert sessions.get(cookie) is not None
    clock.advance(DEFAULT_IDLE_TIMEOUT_MS)
    assert sessions.get(cookie) is None
    assert service.closed
    assert len(sessions) == 0


def test_logout_close_and_forged_cookies(bootstrap: str) -> None:
    sessions, opened = store(bootstrap, MockClock(), mechanism="SCRAM-SHA-256")
    first = sessions.login(SCRAM_USER, SCRAM_PASSWORD)
    second = sessions.login(SCRAM_USER, SCRAM_PASSWORD)
    session_id, _, signature = first.rpartition(".")
    assert sessions.get(f"{session_id}.{'0' * len(signature)}") is None
    assert sessions.get(session_id) is None
    assert sessions.get(None) is None
    sessions.logout(first)
    assert opened[0].closed
    assert not opened[1].closed
    assert sessions.get(first) is None
    sessions.close()
    assert opened[1].closed
    assert sessions.get(second) is None


@pytest.mark.parametrize(
    ("user", "password", "message"),
    [
        (PLAIN_USER, "wrong", "wrong username or password"),
        ("nobody", "x", "wrong username or password"),
        ("", "x", "give a username and a password"),
        (PLAIN_USER, "", "give a username and a password"),
    ],
)
def test_a_refused_login_opens_nothing(
    bootstrap: str, user: str, password: str, message: str
) -> None:
    sessions, opened = store(bootstrap, MockClock())
    with pytest.raises(ConsoleLoginError, match=message):
        sessions.login(user, password)
    assert opened == []
    assert len(sessions) == 0
