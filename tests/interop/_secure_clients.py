"""How each interop client is configured for the secured broker of
``odradek.testing.secure_broker`` (shared by test_security and test_security_failures).

Each ``*_config`` function gives one client's settings for a listener of that broker and a SASL
mechanism (None: no SASL), in that client's own option names. ``failing_client`` runs a Python
client that is expected to give up in a child process and returns what it printed; ``kcat``
and ``kafkajs`` run the other two clients as processes. Listener names: those of
``secure_broker.LISTENERS`` (``MTLS`` speaks SSL and asks for a client certificate;
``LIMITED`` speaks SASL_PLAINTEXT and offers PLAIN only).
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from aiokafka.helpers import create_ssl_context

from odradek.testing.secure_broker import (
    PLAIN_PASSWORD,
    PLAIN_USER,
    SCRAM_PASSWORD,
    SCRAM_USER,
    SecureBroker,
)

from .conftest import node_env

#: The security protocol of each listener not named after its protocol.
PROTOCOL = {"MTLS": "SSL", "LIMITED": "SASL_PLAINTEXT"}
COUNT = 30
JS_DIR = Path(__file__).parent / "js"


def protocol(listener: str) -> str:
    return PROTOCOL.get(listener, listener)


def credentials(mechanism: str | None) -> tuple[str, str]:
    return (PLAIN_USER, PLAIN_PASSWORD) if mechanism == "PLAIN" else (SCRAM_USER, SCRAM_PASSWORD)


def new_topic() -> str:
    return f"secure-{uuid.uuid4().hex[:10]}"


def values_for(tag: str) -> list[bytes]:
    return [f"{tag}-{i}".encode() for i in range(COUNT)]


def librdkafka_config(
    secure: SecureBroker, listener: str, mechanism: str | None, **extra: str
) -> dict[str, Any]:
    """confluent-kafka's (and kcat's) settings; ``extra`` overrides any of them."""
    certs = secure.certificates
    conf: dict[str, Any] = {
        "bootstrap.servers": secure.address(listener),
        "security.protocol": protocol(listener),
    }
    if "SSL" in conf["security.protocol"]:
        conf["ssl.ca.location"] = str(certs.ca)
    if listener == "MTLS":
        conf["ssl.certificate.location"] = str(certs.client_cert)
        conf["ssl.key.location"] = str(certs.client_key)
    if mechanism is not None:
        user, password = credentials(mechanism)
        conf.update({"sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password})
    conf.update(extra)
    return conf


def kafka_python_config(
    secure: SecureBroker, listener: str, mechanism: str | None, **extra: Any
) -> dict[str, Any]:
    certs = secure.certificates
    conf: dict[str, Any] = {
        "bootstrap_servers": secure.address(listener),
        "security_protocol": protocol(listener),
    }
    if "SSL" in conf["security_protocol"]:
        conf["ssl_cafile"] = str(certs.ca)
    if listener == "MTLS":
        conf.update(ssl_certfile=str(certs.client_cert), ssl_keyfile=str(certs.client_key))
    if mechanism is not None:
        user, password = credentials(mechanism)
        conf.update(
            sasl_mechanism=mechanism, sasl_plain_username=user, sasl_plain_password=password
        )
    conf.update(extra)
    return conf


def aiokafka_config(
    secure: SecureBroker,
    listener: str,
    mechanism: str | None,
    *,
    ssl_files: bool = False,
    **extra: Any,
) -> dict[str, Any]:
    """aiokafka's settings; with ``ssl_files`` the TLS files stay in an ``ssl`` entry (the
    arguments of ``create_ssl_context``) so the settings can be passed to a child process."""
    certs = secure.certificates
    conf: dict[str, Any] = {
        "bootstrap_servers": secure.address(listener),
        "security_protocol": protocol(listener),
    }
    if "SSL" in conf["security_protocol"]:
        mtls = listener == "MTLS"
        files = {
            "cafile": str(certs.ca),
            "certfile": str(certs.client_cert) if mtls else None,
            "keyfile": str(certs.client_key) if mtls else None,
        }
        if ssl_files:
            conf["ssl"] = files
        else:
            conf["ssl_context"] = create_ssl_context(**files)
    if mechanism is not None:
        user, password = credentials(mechanism)
        conf.update(
            sasl_mechanism=mechanism, sasl_plain_username=user, sasl_plain_password=password
        )
    conf.update(extra)
    return conf


#: Run in a child process: a client that gives up on the broker leaves sockets to the
#: garbage collector (kafka-python's wakeup pair, aiokafka's transport), which would surface
#: as ResourceWarnings in whatever test of this process runs next. Prints the client's log
#: and then ``RAISED <exception class> <message>``.
_FAILING_CLIENT = """
import asyncio, json, logging, sys, warnings
warnings.simplefilter("ignore")
logging.basicConfig(level=logging.WARNING, stream=sys.stdout)
conf = json.loads(sys.argv[2])
try:
    if sys.argv[1] == "kafka-python":
        import kafka
        kafka.KafkaProducer(**conf, bootstrap_timeout_ms=3000)
    else:
        import aiokafka
        from aiokafka.helpers import create_ssl_context
        files = conf.pop("ssl", None)
        if files is not None:
            conf["ssl_context"] = create_ssl_context(**files)
        async def start():
            producer = aiokafka.AIOKafkaProducer(**conf, request_timeout_ms=5000)
            try:
                await producer.start()
            finally:
                await producer.stop()
        asyncio.run(start())
except Exception as error:
    print("RAISED", type(error).__name__, error)
"""


def failing_client(client: str, conf: dict[str, Any]) -> str:
    """Runs ``client`` (kafka-python or aiokafka) with ``conf`` in a child process until it
    gives up; fails the test unless it raised. Returns its output."""
    result = subprocess.run(
        [sys.executable, "-c", _FAILING_CLIENT, client, json.dumps(conf)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "RAISED" in result.stdout, result.stdout + result.stderr
    return result.stdout


def raised(log: str) -> tuple[str, str]:
    """The class name and message of the exception a ``failing_client`` printed."""
    line = next(line for line in log.splitlines() if line.startswith("RAISED "))
    _, name, message = line.split(" ", 2)
    return name, message


def kcat(
    conf: dict[str, Any], *args: str, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Runs kcat with librdkafka settings ``conf`` (``bootstrap.servers`` becomes ``-b``)."""
    if shutil.which("kcat") is None:
        pytest.fail("kcat is missing: run scripts/bootstrap")
    options: list[str] = []
    for key, value in conf.items():
        if key == "bootstrap.servers":
            continue
        options += ["-X", f"{'sasl.mechanisms' if key == 'sasl.mechanism' else key}={value}"]
    return subprocess.run(
        ["kcat", "-b", conf["bootstrap.servers"], *options, *args],
        input=stdin,
        capture_output=True,
        timeout=60,
        check=False,
    )


def kafkajs_security(
    secure: SecureBroker, listener: str, mechanism: str | None, **ssl_files: Path
) -> dict[str, Any]:
    """kafkajs's ``ssl`` / ``sasl`` options; ``ssl_files`` (``ca``, ``cert``, ``key``)
    replace the PEM files the listener would get."""
    certs = secure.certificates
    security: dict[str, Any] = {}
    if "SSL" in protocol(listener):
        files = {"ca": certs.ca}
        if listener == "MTLS":
            files.update(cert=certs.client_cert, key=certs.client_key)
        files.update(ssl_files)
        ssl: dict[str, Any] = {name: path.read_text() for name, path in files.items()}
        ssl["ca"] = [ssl["ca"]]
        security["ssl"] = ssl
    if mechanism is not None:
        user, secret = credentials(mechanism)
        security["sasl"] = {"mechanism": mechanism.lower(), "username": user, "password": secret}
    return security


def kafkajs(secure: SecureBroker, listener: str, security: dict[str, Any]) -> dict[str, Any]:
    """Runs js/secure_round_trip.js: ``{"values", "sent"}`` or ``{"error": {name, type,
    message}}`` when the producer could not connect."""
    if shutil.which("node") is None or not (JS_DIR / "node_modules" / "kafkajs").is_dir():
        pytest.fail("node or kafkajs is missing: run scripts/bootstrap")
    values = [base64.b64encode(v).decode() for v in values_for("js")]
    result = subprocess.run(
        ["node", str(JS_DIR / "secure_round_trip.js")],
        input=json.dumps(
            {"brokers": secure.address(listener), "topic": new_topic(), "values": values,
             "security": security}
        ).encode(),
        capture_output=True,
        timeout=90,
        env=node_env(),
        check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    answer: dict[str, Any] = json.loads(result.stdout)
    answer["sent"] = values
    return answer
