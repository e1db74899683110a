"""``odradek users scram``: set, describe and delete SCRAM credentials over a SASL_SSL
listener (the admin's own login from ``--command-config``), the new credential working for a
client, and Kafka's per-user errors as one line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek import Broker
from odradek.cli.main import main
from odradek.client.admin import AdminClient
from odradek.errors import KafkaError
from odradek.testing.certificates import make_certificates
from odradek.testing.secure_broker import PLAIN_PASSWORD, PLAIN_USER, SecureBroker, broker_settings


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureBroker]:
    certificates = make_certificates(tmp_path_factory.mktemp("certificates"))
    with Broker(config=broker_settings(certificates)) as broker:
        yield SecureBroker(broker, certificates)


@pytest.fixture
def command_config(secure: SecureBroker, tmp_path: Path) -> Path:
    path = tmp_path / "admin.properties"
    path.write_text(
        "security.protocol=SASL_SSL\n"
        f"ssl.ca.location={secure.certificates.ca}\n"
        "sasl.mechanism=PLAIN\n"
        f"sasl.username={PLAIN_USER}\n"
        f"sasl.password={PLAIN_PASSWORD}\n"
    )
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(["users", "scram", *args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_set_describe_login_delete(
    secure: SecureBroker, command_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["--bootstrap-server", secure.address("SASL_SSL"), "--command-config"]
    status, out, err = run(
        capsys, "set", *common, str(command_config), "--user", "dave",
        "--mechanism", "scram-sha-512", "--iterations", "8192", "--password", "dave-secret",
    )  # fmt: skip
    assert (status, err) == (0, "")
    assert "SCRAM-SHA-512" in out
    status, out, err = run(capsys, "describe", *common, str(command_config), "--user", "dave")
    assert status == 0
    assert json.loads(out) == {"dave": {"SCRAM-SHA-512": 8192}}
    login = {
        "bootstrap.servers": secure.address("SASL_SSL"),
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": str(secure.certificates.ca),
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "dave",
        "sasl.password": "dave-secret",
    }
    with AdminClient(login) as client:
        assert client.describe_cluster(timeout_ms=10_000).brokers
    status, _out, err = run(
        capsys, "delete", *common, str(command_config), "--user", "dave",
        "--mechanism", "SCRAM-SHA-512",
    )  # fmt: skip
    assert (status, err) == (0, "")
    with AdminClient({**login, "request.timeout.ms": 2000}) as client, pytest.raises(KafkaError):
        client.describe_cluster(timeout_ms=3000)
    status, _out, err = run(capsys, "describe", *common, str(command_config), "--user", "dave")
    assert status == 1
    assert err.startswith("odradek: RESOURCE_NOT_FOUND")
    assert len(err.splitlines()) == 1


def test_too_few_iterations_is_a_usage_error(
    secure: SecureBroker, command_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _out, err = run(
        capsys, "set", "--bootstrap-server", secure.address("SASL_SSL"),
        "--command-config", str(command_config), "--user", "x", "--mechanism", "SCRAM-SHA-256",
        "--iterations", "100", "--password", "p",
    )  # fmt: skip
    assert status == 2
    assert "--iterations" in err
