"""Security interop: confluent-kafka, kafka-python, aiokafka and kcat produce and read back
over SSL, mutual TLS, SASL_PLAINTEXT and SASL_SSL with PLAIN, SCRAM-SHA-256 and
SCRAM-SHA-512; a wrong password, an unknown mechanism and an untrusted or expired client
certificate each fail with the error the client reports for it. The broker records the
authenticated principal of each connection (checked through its server)."""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import subprocess
import sys
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aiokafka
import confluent_kafka
import pytest
from aiokafka.helpers import create_ssl_context

from odradek import Broker
from odradek.broker.principal import KafkaPrincipal
from odradek.testing.certificates import make_certificates
from odradek.testing.secure_broker import (
    PLAIN_PASSWORD,
    PLAIN_USER,
    SCRAM_PASSWORD,
    SCRAM_USER,
    SecureBroker,
    add_scram_user,
    broker_settings,
)

from .conftest import node_env

with warnings.catch_warnings():
    # kafka-python loads its protocol schemas with the deprecated importlib.resources.read_text.
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka
    import kafka.errors

pytestmark = pytest.mark.interop

COUNT = 30
#: (listener, SASL mechanism) pairs every client is run over.
CASES = [
    ("SSL", None),
    ("MTLS", None),
    ("SASL_PLAINTEXT", "PLAIN"),
    ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
    ("SASL_SSL", "SCRAM-SHA-512"),
    ("SASL_SSL", "PLAIN"),
    ("SASL_SSL", "SCRAM-SHA-256"),
]
PROTOCOL = {"MTLS": "SSL", "LIMITED": "SASL_PLAINTEXT"}


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureBroker]:
    certificates = make_certificates(tmp_path_factory.mktemp("certificates"))
    with Broker(config=broker_settings(certificates)) as broker:
        add_scram_user(broker)
        yield SecureBroker(broker, certificates)


def _credentials(mechanism: str | None) -> tuple[str, str]:
    return (PLAIN_USER, PLAIN_PASSWORD) if mechanism == "PLAIN" else (SCRAM_USER, SCRAM_PASSWORD)


def _expected_principal(listener: str, mechanism: str | None) -> KafkaPrincipal:
    if mechanism is not None:
        return KafkaPrincipal("User", _credentials(mechanism)[0])
    if listener == "MTLS":
        return KafkaPrincipal("User", "alice")  # the rule maps CN=alice,... to alice
    return KafkaPrincipal("User", "ANONYMOUS")


def _principals(secure: SecureBroker, listener: str) -> set[KafkaPrincipal]:
    server = secure.broker.app.server
    assert server is not None
    return {
        c.authenticator.principal
        for c in list(server._connections)
        if c.listener.name == listener and c.authenticator.authenticated
    }


def _topic() -> str:
    return f"secure-{uuid.uuid4().hex[:10]}"


def _values(tag: str) -> list[bytes]:
    return [f"{tag}-{i}".encode() for i in range(COUNT)]


def _wait_for(condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


# --- confluent-kafka (librdkafka) ------------------------------------------------------------


def _librdkafka(
    secure: SecureBroker, listener: str, mechanism: str | None, **extra: str
) -> dict[str, Any]:
    certs = secure.certificates
    conf: dict[str, Any] = {
        "bootstrap.servers": secure.address(listener),
        "security.protocol": PROTOCOL.get(listener, listener),
    }
    if "SSL" in conf["security.protocol"]:
        conf["ssl.ca.location"] = str(certs.ca)
    if listener == "MTLS":
        conf["ssl.certificate.location"] = str(certs.client_cert)
        conf["ssl.key.location"] = str(certs.client_key)
    if mechanism is not None:
        user, password = _credentials(mechanism)
        conf.update({"sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password})
    conf.update(extra)
    return conf


@pytest.mark.parametrize(("listener", "mechanism"), CASES)
def test_confluent_kafka_round_trip(
    secure: SecureBroker, listener: str, mechanism: str | None
) -> None:
    topic, values = _topic(), _values("ck")
    conf = _librdkafka(secure, listener, mechanism)
    producer = confluent_kafka.Producer(conf)
    for value in values:
        producer.produce(topic, value=value)
    assert producer.flush(30) == 0
    assert _expected_principal(listener, mechanism) in _principals(secure, listener)
    consumer = confluent_kafka.Consumer(
        {**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(got) < COUNT and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got.append(message.value())
    finally:
        consumer.close()
    assert sorted(got) == sorted(values)


@pytest.mark.parametrize("listener", ["SSL", "SASL_SSL"])
def test_large_fetches_over_tls_come_back_whole(secure: SecureBroker, listener: str) -> None:
    """Fetch slices of 64 KiB and more are read from the segment in chunks and written through
    the TLS transport (no sendfile under TLS): 2 MB in one partition read back byte for byte."""
    mechanism = "SCRAM-SHA-256" if listener == "SASL_SSL" else None
    conf = _librdkafka(secure, listener, mechanism)
    topic = _topic()
    values = [bytes([i % 251]) * 10_000 + i.to_bytes(4, "big") for i in range(200)]
    producer = confluent_kafka.Producer({**conf, "linger.ms": 20})
    for value in values:
        producer.produce(topic, value=value, partition=0)
    assert producer.flush(30) == 0
    consumer = confluent_kafka.Consumer(
        {**conf, "group.id": f"g-{topic}", "fetch.max.bytes": 4_000_000,
         "max.partition.fetch.bytes": 4_000_000}
    )  # fmt: skip
    consumer.assign([confluent_kafka.TopicPartition(topic, 0, confluent_kafka.OFFSET_BEGINNING)])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(got) < len(values) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got.append(message.value())
    finally:
        consumer.close()
    assert got == values


def _librdkafka_errors(conf: dict[str, Any]) -> list[confluent_kafka.KafkaError]:
    errors: list[confluent_kafka.KafkaError] = []
    producer = confluent_kafka.Producer({**conf, "error_cb": errors.append})
    deadline = time.monotonic() + 20
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    assert errors, "the client reported no error"
    return errors


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_confluent_kafka_wrong_password(secure: SecureBroker, mechanism: str) -> None:
    errors = _librdkafka_errors(
        _librdkafka(secure, "SASL_SSL", mechanism, **{"sasl.password": "wrong"})
    )
    assert errors[0].code() == confluent_kafka.KafkaError._AUTHENTICATION
    assert "Authentication failed" in errors[0].str()


def test_confluent_kafka_unknown_mechanism(secure: SecureBroker) -> None:
    errors = _librdkafka_errors(_librdkafka(secure, "LIMITED", "SCRAM-SHA-256"))
    assert errors[0].code() == confluent_kafka.KafkaError._AUTHENTICATION
    assert "Unsupported SASL mechanism" in errors[0].str()


@pytest.mark.parametrize("which", ["untrusted", "expired", "none"])
def test_confluent_kafka_refused_client_certificate(secure: SecureBroker, which: str) -> None:
    certs = secure.certificates
    files = {
        "untrusted": (certs.untrusted_cert, certs.untrusted_key),
        "expired": (certs.expired_cert, certs.expired_key),
    }
    conf = _librdkafka(secure, "MTLS", None)
    del conf["ssl.certificate.location"], conf["ssl.key.location"]
    if which in files:
        cert, key = files[which]
        conf.update({"ssl.certificate.location": str(cert), "ssl.key.location": str(key)})
    # Under TLS 1.3 the client finishes its side of the handshake before the broker checks
    # its certificate: librdkafka then sees the connection closed, not a handshake error.
    errors = _librdkafka_errors(conf)
    assert {e.code() for e in errors} <= {
        confluent_kafka.KafkaError._SSL,
        confluent_kafka.KafkaError._TRANSPORT,
        confluent_kafka.KafkaError._ALL_BROKERS_DOWN,
    }
    assert not {KafkaPrincipal("User", "mallory"), KafkaPrincipal("User", "eve")} & _principals(
        secure, "MTLS"
    )


def test_confluent_kafka_refuses_a_broker_it_does_not_trust(secure: SecureBroker) -> None:
    conf = _librdkafka(
        secure, "SSL", None, **{"ssl.ca.location": str(secure.certificates.untrusted_ca)}
    )
    errors = _librdkafka_errors(conf)
    assert errors[0].code() in (
        confluent_kafka.KafkaError._SSL,
        confluent_kafka.KafkaError._TRANSPORT,
    )
    assert "certificate verify failed" in errors[0].str()
    assert "SSL_HANDSHAKE" in errors[0].str()


def test_confluent_admin_manages_scram_credentials(secure: SecureBroker) -> None:
    from confluent_kafka import admin as ck_admin  # noqa: PLC0415 (only this test needs it)

    client = ck_admin.AdminClient(_librdkafka(secure, "SASL_SSL", "PLAIN"))
    info = ck_admin.ScramCredentialInfo(ck_admin.ScramMechanism.SCRAM_SHA_512, 5000)
    results = client.alter_user_scram_credentials(
        [ck_admin.UserScramCredentialUpsertion("carol", info, b"carol-secret")]
    )
    assert results["carol"].result() is None
    described = client.describe_user_scram_credentials(["carol"])["carol"].result()
    assert [(i.mechanism, i.iterations) for i in described.scram_credential_infos] == [
        (ck_admin.ScramMechanism.SCRAM_SHA_512, 5000)
    ]
    producer = confluent_kafka.Producer(
        _librdkafka(
            secure,
            "SASL_SSL",
            "SCRAM-SHA-512",
            **{"sasl.username": "carol", "sasl.password": "carol-secret"},
        )
    )
    producer.produce(_topic(), value=b"by carol")
    assert producer.flush(30) == 0
    results = client.alter_user_scram_credentials(
        [ck_admin.UserScramCredentialDeletion("carol", ck_admin.ScramMechanism.SCRAM_SHA_512)]
    )
    assert results["carol"].result() is None
    with pytest.raises(confluent_kafka.KafkaException) as info:
        client.describe_user_scram_credentials(["carol"])["carol"].result()
    assert info.value.args[0].code() == confluent_kafka.KafkaError.RESOURCE_NOT_FOUND


def test_confluent_kafka_re_authenticates_on_the_same_connection(secure: SecureBroker) -> None:
    """KIP-368: with connections.max.reauth.ms the broker tells librdkafka the session
    lifetime; librdkafka logs in again on the open connection before it ends, and produces
    on."""
    settings = {**broker_settings(secure.certificates), "connections.max.reauth.ms": "1500"}
    with Broker(config=settings) as broker:
        add_scram_user(broker)
        server = broker.app.server
        assert server is not None
        again = SecureBroker(broker, secure.certificates)
        producer = confluent_kafka.Producer(_librdkafka(again, "SASL_PLAINTEXT", "SCRAM-SHA-256"))
        topic = _topic()

        def reauthenticated() -> bool:
            producer.produce(topic, value=b"x")
            producer.poll(0.1)
            return any(
                c.authenticator.reauthentications > 0
                for c in list(server._connections)
                if c.listener.name == "SASL_PLAINTEXT"
            )

        _wait_for(reauthenticated, "a re-authentication")
        assert producer.flush(30) == 0


# --- kafka-python ----------------------------------------------------------------------------


def _kafka_python(secure: SecureBroker, listener: str, mechanism: str | None) -> dict[str, Any]:
    certs = secure.certificates
    conf: dict[str, Any] = {
        "bootstrap_servers": secure.address(listener),
        "security_protocol": PROTOCOL.get(listener, listener),
    }
    if "SSL" in conf["security_protocol"]:
        conf["ssl_cafile"] = str(certs.ca)
    if listener == "MTLS":
        conf.update(ssl_certfile=str(certs.client_cert), ssl_keyfile=str(certs.client_key))
    if mechanism is not None:
        user, password = _credentials(mechanism)
        conf.update(
            sasl_mechanism=mechanism, sasl_plain_username=user, sasl_plain_password=password
        )
    return conf


@pytest.mark.parametrize(("listener", "mechanism"), CASES)
def test_kafka_python_round_trip(
    secure: SecureBroker, listener: str, mechanism: str | None
) -> None:
    topic, values = _topic(), _values("kp")
    conf = _kafka_python(secure, listener, mechanism)
    producer = kafka.KafkaProducer(**conf)
    try:
        for value in values:
            producer.send(topic, value=value)
        producer.flush(30)
    finally:
        producer.close()
    consumer = kafka.KafkaConsumer(
        topic, group_id=f"g-{topic}", auto_offset_reset="earliest", **conf
    )
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(got) < COUNT and time.monotonic() < deadline:
            for batch in consumer.poll(500).values():
                got.extend(record.value for record in batch)
    finally:
        consumer.close()
    assert sorted(got) == sorted(values)


#: Run in a child process: a client that gives up on the broker leaves sockets to the
#: garbage collector (kafka-python's wakeup pair, aiokafka's transport), which would surface
#: as ResourceWarnings in whatever test of this process runs next.
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
        if conf.pop("cafile", None) is not None:
            conf["ssl_context"] = create_ssl_context(cafile=sys.argv[3])
        async def start():
            producer = aiokafka.AIOKafkaProducer(**conf)
            try:
                await producer.start()
            finally:
                await producer.stop()
        asyncio.run(start())
except Exception as error:
    print("RAISED", type(error).__name__, error)
"""


def _failing_client(client: str, conf: dict[str, Any], cafile: str = "") -> str:
    result = subprocess.run(
        [sys.executable, "-c", _FAILING_CLIENT, client, json.dumps(conf), cafile],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "RAISED" in result.stdout, result.stdout + result.stderr
    return result.stdout


def test_kafka_python_wrong_password(secure: SecureBroker) -> None:
    conf = {**_kafka_python(secure, "SASL_PLAINTEXT", "SCRAM-SHA-256"), "sasl_plain_password": "x"}
    log = _failing_client("kafka-python", conf)
    assert "SaslAuthenticationFailedError" in log
    assert "invalid credentials" in log


def test_kafka_python_unknown_mechanism(secure: SecureBroker) -> None:
    log = _failing_client("kafka-python", _kafka_python(secure, "LIMITED", "SCRAM-SHA-512"))
    assert "UnsupportedSaslMechanismError" in log


# --- aiokafka --------------------------------------------------------------------------------


def _aiokafka(secure: SecureBroker, listener: str, mechanism: str | None) -> dict[str, Any]:
    certs = secure.certificates
    conf: dict[str, Any] = {
        "bootstrap_servers": secure.address(listener),
        "security_protocol": PROTOCOL.get(listener, listener),
    }
    if "SSL" in conf["security_protocol"]:
        mtls = listener == "MTLS"
        conf["ssl_context"] = create_ssl_context(
            cafile=str(certs.ca),
            certfile=str(certs.client_cert) if mtls else None,
            keyfile=str(certs.client_key) if mtls else None,
        )
    if mechanism is not None:
        user, password = _credentials(mechanism)
        conf.update(
            sasl_mechanism=mechanism, sasl_plain_username=user, sasl_plain_password=password
        )
    return conf


async def _aiokafka_round_trip(
    conf: dict[str, Any], topic: str, values: list[bytes]
) -> list[bytes]:
    producer = aiokafka.AIOKafkaProducer(**conf)
    await producer.start()
    try:
        for value in values:
            await producer.send(topic, value=value)
        await producer.flush()
    finally:
        await producer.stop()
    consumer = aiokafka.AIOKafkaConsumer(
        topic, group_id=f"g-{topic}", auto_offset_reset="earliest", **conf
    )
    await consumer.start()
    got: list[bytes] = []
    try:
        async with asyncio.timeout(30):
            while len(got) < len(values):
                for batch in (await consumer.getmany(timeout_ms=500)).values():
                    got.extend(record.value for record in batch if record.value is not None)
    finally:
        await consumer.stop()
    return got


@pytest.mark.parametrize(("listener", "mechanism"), CASES)
def test_aiokafka_round_trip(secure: SecureBroker, listener: str, mechanism: str | None) -> None:
    topic, values = _topic(), _values("aio")
    got = asyncio.run(_aiokafka_round_trip(_aiokafka(secure, listener, mechanism), topic, values))
    assert sorted(got) == sorted(values)


def test_aiokafka_wrong_password(secure: SecureBroker) -> None:
    conf = {**_aiokafka(secure, "SASL_SSL", "SCRAM-SHA-512"), "sasl_plain_password": "x"}
    del conf["ssl_context"]
    conf["cafile"] = True
    log = _failing_client("aiokafka", conf, str(secure.certificates.ca))
    assert "RAISED" in log
    assert "Authentication failed" in log


# --- kcat ------------------------------------------------------------------------------------


def _kcat(
    secure: SecureBroker,
    listener: str,
    mechanism: str | None,
    *args: str,
    stdin: bytes | None = None,
    password: str | None = None,
) -> subprocess.CompletedProcess[bytes]:
    if shutil.which("kcat") is None:
        pytest.fail("kcat is missing: run scripts/bootstrap")
    conf = _librdkafka(secure, listener, mechanism)
    if password is not None:
        conf["sasl.password"] = password
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


@pytest.mark.parametrize(("listener", "mechanism"), CASES)
def test_kcat_round_trip(secure: SecureBroker, listener: str, mechanism: str | None) -> None:
    topic, values = _topic(), _values("kcat")
    produced = _kcat(
        secure, listener, mechanism, "-P", "-t", topic, stdin=b"\n".join(values) + b"\n"
    )
    assert produced.returncode == 0, produced.stderr.decode()
    consumed = _kcat(secure, listener, mechanism, "-C", "-t", topic, "-o", "beginning", "-e", "-q")
    assert consumed.returncode == 0, consumed.stderr.decode()
    assert sorted(consumed.stdout.split()) == sorted(values)


def test_kcat_wrong_password(secure: SecureBroker) -> None:
    result = _kcat(secure, "SASL_PLAINTEXT", "PLAIN", "-L", "-m", "5", password="wrong")
    assert result.returncode != 0
    assert b"Authentication failed" in result.stderr


# --- kafkajs ---------------------------------------------------------------------------------

JS_DIR = Path(__file__).parent / "js"


def _kafkajs(
    secure: SecureBroker, listener: str, mechanism: str | None, password: str | None = None
) -> dict[str, Any]:
    if shutil.which("node") is None or not (JS_DIR / "node_modules" / "kafkajs").is_dir():
        pytest.fail("node or kafkajs is missing: run scripts/bootstrap")
    certs = secure.certificates
    security: dict[str, Any] = {}
    if "SSL" in PROTOCOL.get(listener, listener):
        ssl: dict[str, Any] = {"ca": [certs.ca.read_text()]}
        if listener == "MTLS":
            ssl.update(cert=certs.client_cert.read_text(), key=certs.client_key.read_text())
        security["ssl"] = ssl
    if mechanism is not None:
        user, secret = _credentials(mechanism)
        security["sasl"] = {
            "mechanism": mechanism.lower(),
            "username": user,
            "password": secret if password is None else password,
        }
    topic = _topic()
    values = [base64.b64encode(v).decode() for v in _values("js")]
    result = subprocess.run(
        ["node", str(JS_DIR / "secure_round_trip.js")],
        input=json.dumps(
            {"brokers": secure.address(listener), "topic": topic, "values": values,
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


@pytest.mark.parametrize(("listener", "mechanism"), CASES)
def test_kafkajs_round_trip(secure: SecureBroker, listener: str, mechanism: str | None) -> None:
    answer = _kafkajs(secure, listener, mechanism)
    assert "error" not in answer, answer.get("error")
    assert sorted(answer["values"]) == sorted(answer["sent"])


def test_kafkajs_wrong_password(secure: SecureBroker) -> None:
    answer = _kafkajs(secure, "SASL_SSL", "SCRAM-SHA-256", password="wrong")
    assert answer["error"]["name"] == "KafkaJSSASLAuthenticationError"
    assert "invalid credentials" in answer["error"]["message"]
