"""Shared parts of the handler tests: one embedded broker per test module, a kafka-python admin
client on it, unique topic names, and a raw client that sends one kio request of an exact
version and returns kio's decoding of the answer (for versions and fields a real client does not
choose, and for error paths a client would refuse to send).
"""

from __future__ import annotations

import datetime
import importlib
import io
import socket
import struct
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32Timedelta

from odradek import Broker
from odradek.protocol import response_class

with warnings.catch_warnings():
    # kafka-python loads its protocol schemas with the deprecated importlib.resources.read_text.
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.admin import KafkaAdminClient

#: Settings of every module's broker: defaults a test can tell apart from Kafka's.
BROKER_CONFIG = {"num.partitions": "3", "log.retention.check.interval.ms": "3600000"}


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(config=BROKER_CONFIG) as running:
        yield running


@pytest.fixture(scope="module")
def admin(broker: Broker) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, client_id="handlers")
    yield client
    client.close()


@pytest.fixture
def topic(request: pytest.FixtureRequest) -> str:
    """A topic name no other test uses."""
    return unique_topic(request.node.name)


def unique_topic(hint: str = "t") -> str:
    cleaned = "".join(c if c.isalnum() or c in "-" else "-" for c in hint)[:60]
    return f"{cleaned}-{uuid.uuid4().hex[:8]}"


def ms(value: int) -> i32Timedelta:
    """A kio int32 duration of ``value`` milliseconds."""
    return i32Timedelta.parse(datetime.timedelta(milliseconds=value))


def schema(api: str, version: int, kind: str = "request") -> ModuleType:
    """kio's generated module of one API version, e.g. ``schema("create_topics", 3)``."""
    return importlib.import_module(f"kio.schema.{api}.v{version}.{kind}")


class RawClient:
    """One connection that sends kio request objects and reads their responses in turn."""

    def __init__(self, host: str, port: int) -> None:
        self._socket = socket.create_connection((host, port), timeout=10)
        self._correlation_id = 0

    def send(self, body: Any) -> Any:
        """Sends ``body`` (a kio request of any version) and returns kio's response object."""
        self._correlation_id += 1
        header_type = body.__header_schema__
        buffer = io.BytesIO()
        entity_writer(header_type)(
            buffer,
            header_type(
                request_api_key=body.__api_key__,
                request_api_version=body.__version__,
                correlation_id=self._correlation_id,
                client_id="raw-test",
            ),
        )
        entity_writer(type(body))(buffer, body)
        payload = buffer.getvalue()
        self._socket.sendall(struct.pack(">i", len(payload)) + payload)
        (size,) = struct.unpack(">i", self._receive(4))
        frame = self._receive(size)
        response_type: Any = response_class(body.__api_key__, body.__version__)
        # kio's readers answer (value, bytes consumed from the given offset).
        header, header_size = entity_reader(response_type.__header_schema__)(frame, 0)
        assert header.correlation_id == self._correlation_id
        response, body_size = entity_reader(response_type)(frame, header_size)
        assert header_size + body_size == len(frame), "trailing bytes after the response"
        return response

    def _receive(self, count: int) -> bytes:
        chunks = []
        while count:
            chunk = self._socket.recv(count)
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            chunks.append(chunk)
            count -= len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        self._socket.close()


@pytest.fixture
def raw(broker: Broker) -> Iterator[RawClient]:
    client = RawClient(broker.host, broker.port)
    yield client
    client.close()


@pytest.fixture
def producer(broker: Broker) -> Iterator[KafkaProducer]:
    client = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=0)
    yield client
    client.close()


@pytest.fixture
def consumer_factory(broker: Broker) -> Iterator[Callable[..., KafkaConsumer]]:
    """Makes consumers with no group, closed after the test."""
    made: list[KafkaConsumer] = []

    def make(**config: Any) -> KafkaConsumer:
        consumer = KafkaConsumer(
            bootstrap_servers=broker.bootstrap_servers,
            group_id=None,
            enable_auto_commit=False,
            **config,
        )
        made.append(consumer)
        return consumer

    yield make
    for consumer in made:
        consumer.close()


def wait_for(condition: Callable[[], Any], what: str, timeout_s: float = 10.0) -> Any:
    """Polls ``condition`` until it returns something truthy, which it returns; fails after
    ``timeout_s`` naming ``what``."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


def partition_dirs(broker: Broker, topic: str) -> list[Path]:
    """The broker's directories of ``topic``'s partitions (live or being deleted)."""
    return sorted(
        path for path in Path(broker.data_dir).iterdir() if path.name.startswith(f"{topic}-")
    )
