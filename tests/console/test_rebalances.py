"""The group page's rebalance history: read from the coordinator's HTTP endpoint through the
admin client (DescribeGroups, then the broker's metrics.port from DescribeConfigs), newest
first, for classic and KIP-848 groups; without an endpoint the page says why and stays up."""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Iterator

import pytest

from odradek import Broker
from odradek.client import AdminClient, NewTopic
from odradek.client.consumer import Consumer
from odradek.console.server import ConsoleServer
from odradek.console.service import ConsoleService

WAIT_S = 20.0


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    config = {
        "group.initial.rebalance.delay.ms": "0",
        "metrics.port": "0",
        "metrics.host": "127.0.0.1",
        "num.partitions": "2",
    }
    with Broker(config=config) as started:
        with AdminClient({"bootstrap.servers": started.bootstrap_servers}) as admin:
            admin.create_topics([NewTopic("history", 2, 1)]).all()
        yield started


def join_and_leave(bootstrap: str, group: str, protocol: str) -> None:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": protocol,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.subscribe(["history"])
        deadline = time.monotonic() + WAIT_S
        while len(consumer.assignment()) < 2:
            assert time.monotonic() < deadline, "the consumer never got both partitions"
            consumer.poll(timeout_ms=200)
    finally:
        consumer.close()


def page(bootstrap: str, path: str) -> str:
    service = ConsoleService(bootstrap)
    server = ConsoleServer(service)
    server.start()
    try:
        with urllib.request.urlopen(server.url.rstrip("/") + path, timeout=30) as answer:
            assert answer.status == 200
            return str(answer.read().decode())
    finally:
        server.stop()
        service.close()


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_the_group_page_lists_the_rebalances_newest_first(broker: Broker, protocol: str) -> None:
    group = f"history-{protocol}"
    join_and_leave(broker.bootstrap_servers, group, protocol)
    with ConsoleService(broker.bootstrap_servers) as service:
        view = service.rebalances(group)
    assert view.note is None
    causes = [row.cause for row in view.rows]
    assert causes[0] == "member_left"
    assert causes[-1] == "member_joined"
    assert view.rows[0].members == 0
    body = page(broker.bootstrap_servers, f"/group?id={group}")
    assert 'id="rebalances"' in body
    assert body.index("member_left") < body.index("member_joined")


def test_without_an_endpoint_the_page_says_why() -> None:
    with Broker(config={"group.initial.rebalance.delay.ms": "0"}) as plain:
        with AdminClient({"bootstrap.servers": plain.bootstrap_servers}) as admin:
            admin.create_topics([NewTopic("history", 2, 1)]).all()
        join_and_leave(plain.bootstrap_servers, "quiet", "classic")
        body = page(plain.bootstrap_servers, "/group?id=quiet")
    assert 'id="rebalances-note"' in body
    assert "has no metrics endpoint: start it with metrics.port set" in body
    assert 'id="lag"' in body  # the rest of the page is there
