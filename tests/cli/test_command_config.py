"""``--command-config`` on every verb that talks to a broker: the admin verbs, ``produce
--producer.config`` and ``consume --consumer.config`` reach a SASL_SSL listener with the
file's login; a missing, garbled or misspelt file is one line and exit 2."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek import Broker
from odradek.cli.main import main
from odradek.testing.certificates import make_certificates
from odradek.testing.secure_broker import PLAIN_PASSWORD, PLAIN_USER, SecureBroker, broker_settings


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureBroker]:
    certificates = make_certificates(tmp_path_factory.mktemp("certificates"))
    with Broker(config=broker_settings(certificates)) as broker:
        yield SecureBroker(broker, certificates)


@pytest.fixture
def login(secure: SecureBroker, tmp_path: Path) -> Path:
    path = tmp_path / "client.properties"
    path.write_text(
        "# the admin's login\n"
        "security.protocol=SASL_SSL\n"
        f"ssl.ca.location={secure.certificates.ca}\n"
        "sasl.mechanism=PLAIN\n"
        f"sasl.username={PLAIN_USER}\n"
        f"sasl.password={PLAIN_PASSWORD}\n"
    )
    return path


def run(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    *args: str,
    stdin: bytes = b"",
) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    capsys.readouterr()
    status = main(list(args))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return status, captured.out, captured.err


def test_admin_produce_and_consume_verbs_log_in_with_the_file(
    secure: SecureBroker,
    login: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = ["--bootstrap-server", secure.address("SASL_SSL")]
    config = ["--command-config", str(login)]
    status, _out, err = run(
        capsys, monkeypatch, "topics", "create", *server, *config, "--topic", "secured",
        "--partitions", "1",
    )  # fmt: skip
    assert (status, err) == (0, "")
    status, out, err = run(capsys, monkeypatch, "topics", "list", *server, *config)
    assert (status, err) == (0, "")
    assert "secured" in out.split()
    status, out, _err = run(capsys, monkeypatch, "cluster", "describe", *server, *config)
    assert status == 0
    assert secure.address("SASL_SSL") in out
    status, out, _err = run(
        capsys, monkeypatch, "configs", "describe", *server, *config,
        "--entity-type", "topics", "--entity-name", "secured",
    )  # fmt: skip
    assert status == 0
    assert "secured" in out
    status, out, _err = run(capsys, monkeypatch, "api-versions", *server, *config)
    assert status == 0
    assert "Produce" in out or "PRODUCE" in out
    status, _out, err = run(
        capsys, monkeypatch, "produce", *server, "--producer.config", str(login),
        "--topic", "secured", stdin=b"one\ntwo\n",
    )  # fmt: skip
    assert (status, err) == (0, "")
    status, out, _err = run(
        capsys, monkeypatch, "consume", *server, "--consumer.config", str(login),
        "--topic", "secured", "--from-beginning", "--max-messages", "2", "--timeout-ms", "10000",
    )  # fmt: skip
    assert status == 0
    assert out.splitlines() == ["one", "two"]


def test_without_the_file_the_secured_listener_is_not_reached(
    secure: SecureBroker, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    status, _out, err = run(
        capsys, monkeypatch, "topics", "list", "--bootstrap-server", secure.address("SASL_SSL")
    )
    assert status == 1
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "no such file"),
        ("security.protocol=SASL_SSL\nsasl.mechansim=PLAIN\n", "did you mean 'sasl.mechanism'"),
        ("sasl.password=\\u12\n", "escape"),
        (b"\xff\xfe garbage", "not a UTF-8 properties file"),
    ],
)
def test_a_bad_file_is_one_line(
    content: str | bytes | None,
    expected: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = tmp_path / "client.properties"
    if isinstance(content, str):
        path.write_text(content)
    elif isinstance(content, bytes):
        path.write_bytes(content)
    for verb in (["topics", "list"], ["groups", "list"], ["acls", "list"]):
        status, out, err = run(capsys, monkeypatch, *verb, "--command-config", str(path))
        assert (status, out) == (2, "")
        assert len(err.splitlines()) == 1, err
        assert "--command-config" in err
        assert expected in err
