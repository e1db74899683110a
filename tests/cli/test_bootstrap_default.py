"""Every command's ``--bootstrap-server`` has one default: ``$ODRADEK_BOOTSTRAP_SERVERS``, else
127.0.0.1:9092; a bad value from either place is one line and exit 2."""

from __future__ import annotations

import pytest

from odradek import Broker
from odradek.cli.main import main

COMMANDS = [
    ("cluster", "describe"),
    ("topics", "list"),
    ("groups", "list"),
    ("log-dirs", "describe"),
    ("api-versions",),
    ("offsets", "get", "--topic", "t"),
    ("configs", "describe", "--entity-type", "brokers", "--entity-name", "0"),
    ("records", "delete", "--topic", "t", "--partition", "0", "--offset", "0"),
]


@pytest.mark.parametrize("command", COMMANDS)
def test_the_environment_names_the_broker(
    command: tuple[str, ...], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ODRADEK_BOOTSTRAP_SERVERS", "nohost")
    assert main([*command]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    [line] = err.splitlines()
    assert line.startswith("odradek: ")
    assert "'--bootstrap-server'" in line


@pytest.mark.parametrize("command", COMMANDS)
def test_the_default_is_shown(command: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*command[:2], "--help"] if len(command) > 1 else [command[0], "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "$ODRADEK_BOOTSTRAP_SERVERS or 127.0.0.1:9092" in out


def test_a_command_reaches_the_broker_the_environment_names(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with Broker() as broker:
        monkeypatch.setenv("ODRADEK_BOOTSTRAP_SERVERS", broker.bootstrap_servers)
        assert main(["cluster", "describe"]) == 0
    assert f"127.0.0.1:{broker.port}" in capsys.readouterr().out
