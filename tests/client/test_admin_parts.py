"""``AdminClient`` as a facade over its parts, the clients' ``Closeable`` base, and the
admin client's ``bootstrap_fail_fast`` (no broker needed: a closed port)."""

from __future__ import annotations

import inspect
import socket

import pytest

from odradek.client.admin import AdminClient
from odradek.client.admin_groups import GroupAdmin
from odradek.client.admin_records import RecordAdmin
from odradek.client.admin_topics import TopicAdmin
from odradek.client.closeable import Closeable
from odradek.client.consumer.consumer import Consumer
from odradek.client.network import NetworkClient
from odradek.client.producer.producer import Producer
from odradek.client.simple_consumer import SimpleConsumer
from odradek.client.streams.connector import ConsumerConnector
from odradek.errors import ErrorCode, KafkaError, KafkaTimeoutError

PARTS = (TopicAdmin, RecordAdmin, GroupAdmin)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def public_methods(cls: type) -> set[str]:
    return {name for name, _ in inspect.getmembers(cls, inspect.isfunction) if name[0] != "_"}


def test_every_public_method_of_every_part_is_a_method_of_the_client() -> None:
    names = [name for part in PARTS for name in public_methods(part)]
    assert len(names) == len(set(names)), "two parts define the same method"
    for part in PARTS:
        for name in public_methods(part):
            facade = getattr(AdminClient, name)
            assert facade.__doc__ == getattr(part, name).__doc__, name


def test_a_client_method_is_its_parts_method_bound_to_the_clients_part() -> None:
    with AdminClient(bootstrap_servers=f"127.0.0.1:{closed_port()}") as admin:
        method = admin.list_topics
        assert method.__wrapped__ is TopicAdmin.list_topics  # type: ignore[attr-defined]
        assert inspect.signature(method) == inspect.signature(TopicAdmin.list_topics)


def test_every_client_is_closeable() -> None:
    for cls in (AdminClient, Consumer, Producer, SimpleConsumer, NetworkClient,
                ConsumerConnector):  # fmt: skip
        assert issubclass(cls, Closeable), cls


def test_with_closes_on_the_way_out_even_on_an_error() -> None:
    closed: list[str] = []

    class Client(Closeable):
        def close(self) -> None:
            closed.append("closed")

    def use() -> None:
        with Client():
            raise ValueError("inside")

    with pytest.raises(ValueError, match="inside"):
        use()
    assert closed == ["closed"]


def test_a_closed_admin_client_refuses_calls() -> None:
    admin = AdminClient(bootstrap_servers=f"127.0.0.1:{closed_port()}")
    admin.close()
    admin.close()  # idempotent
    with pytest.raises(KafkaError) as raised:
        admin.list_topics(timeout_ms=1_000)
    assert raised.value.error_code == ErrorCode.NETWORK_EXCEPTION


def test_bootstrap_fail_fast_says_at_once_that_nothing_answers() -> None:
    # A long deadline: only the fail-fast rule ends the call with NETWORK_EXCEPTION.
    bootstrap = f"127.0.0.1:{closed_port()}"
    admin = AdminClient(bootstrap_servers=bootstrap, bootstrap_fail_fast=True)
    with admin, pytest.raises(KafkaError) as raised:
        admin.list_topics(timeout_ms=120_000)
    assert raised.value.error_code == ErrorCode.NETWORK_EXCEPTION
    assert str(raised.value).startswith("cannot connect to the bootstrap servers: ")
    assert bootstrap in str(raised.value)


def test_by_default_the_admin_client_waits_for_a_broker_until_the_deadline() -> None:
    admin = AdminClient(bootstrap_servers=f"127.0.0.1:{closed_port()}")
    with admin, pytest.raises(KafkaTimeoutError):
        admin.list_topics(timeout_ms=300)
