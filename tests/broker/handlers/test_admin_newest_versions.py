"""The admin handlers describe responses with the fields of the newest version kio models, so
raising ``IMPLEMENTED_VERSIONS`` later needs no handler change. For the APIs whose newest
version is beyond the served range (CreateTopics v7, DeleteTopics v6, InitProducerId v6), the
handlers run on a broker's own event loop (driven by the test's thread) with the response
built and encoded at that newest version instead of the served one.
"""

from __future__ import annotations

import asyncio
import inspect
import io
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from kio.index import load_response_schema
from kio.serial import entity_writer

from odradek.broker.app import BrokerApp
from odradek.broker.config import BrokerConfig
from odradek.broker.context import BrokerContext
from odradek.broker.handlers import create_topics, delete_topics, init_producer_id
from odradek.broker.handlers._admin import topic_uuid
from odradek.errors import ErrorCode
from odradek.protocol import Request, RequestHeader
from odradek.protocol.builder import build_entity

from .conftest import ms, schema


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """The broker's event loop, run by the test's thread while a handler is called."""
    running = asyncio.new_event_loop()
    yield running
    running.close()


@pytest.fixture(scope="module")
def ctx(
    tmp_path_factory: pytest.TempPathFactory, loop: asyncio.AbstractEventLoop
) -> Iterator[BrokerContext]:
    """A started broker whose loop is idle: handlers may be called on this thread."""
    data_dir: Path = tmp_path_factory.mktemp("newest")
    config = BrokerConfig.from_mapping(
        {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(data_dir)}
    )
    app = BrokerApp(config)
    loop.run_until_complete(app.start())
    assert app.ctx is not None
    try:
        yield app.ctx
    finally:
        loop.run_until_complete(app.stop())


def call_at_newest(
    monkeypatch: pytest.MonkeyPatch,
    loop: asyncio.AbstractEventLoop,
    ctx: BrokerContext,
    module: ModuleType,
    body: Any,
) -> Any:
    """Runs ``module.handle`` on ``body`` (a kio request of version v) with the response
    built at v, served or not, and checks that kio encodes it."""
    version = int(body.__version__)

    def build_at_newest(api_key: int, _served: int, fields: Any) -> Any:
        return build_entity(load_response_schema(api_key, version), fields)

    monkeypatch.setattr(module, "build_response", build_at_newest)
    header = RequestHeader(int(module.API_KEY), version, 1, "newest", 2)

    async def call() -> Any:  # on the loop: creation and deletion run as tasks of it
        result = module.handle(ctx, Request(header, body, 0))
        return await result if inspect.isawaitable(result) else result

    response = loop.run_until_complete(call())
    entity_writer(type(response))(io.BytesIO(), response)
    return response


def test_create_topics_v7_describes_the_new_topic(
    monkeypatch: pytest.MonkeyPatch, loop: asyncio.AbstractEventLoop, ctx: BrokerContext
) -> None:
    m = schema("create_topics", 7)

    def topic(name: str) -> Any:
        return m.CreatableTopic(
            name=name,
            num_partitions=2,
            replication_factor=1,
            assignments=(),
            configs=(m.CreatableTopicConfig(name="retention.ms", value="5000"),),
        )

    body = m.CreateTopicsRequest(
        topics=(topic("newest-created"), topic("bad name")), timeout=ms(1000)
    )

    response = call_at_newest(monkeypatch, loop, ctx, create_topics, body)

    created, failed = response.topics
    assert (created.error_code, created.num_partitions, created.replication_factor) == (0, 2, 1)
    assert created.topic_id != uuid.UUID(int=0)
    configs = {c.name: (c.value, c.config_source) for c in created.configs}
    assert configs["retention.ms"] == ("5000", 1)
    assert configs["segment.ms"][1] == 5
    assert failed.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert (failed.topic_id, failed.num_partitions, failed.configs) == (uuid.UUID(int=0), -1, None)


def test_delete_topics_v6_by_id(
    monkeypatch: pytest.MonkeyPatch, loop: asyncio.AbstractEventLoop, ctx: BrokerContext
) -> None:
    ctx.topics.create_topic("newest-doomed", 1, 1)
    topic_id = topic_uuid(ctx.topics.metadata.topic_id("newest-doomed"))
    unknown_id = uuid.uuid4()
    m = schema("delete_topics", 6)
    body = m.DeleteTopicsRequest(
        topics=(
            m.DeleteTopicState(name=None, topic_id=topic_id),
            m.DeleteTopicState(name=None, topic_id=unknown_id),
            m.DeleteTopicState(name="newest-missing", topic_id=uuid.UUID(int=0)),
        ),
        timeout=ms(1000),
    )

    response = call_at_newest(monkeypatch, loop, ctx, delete_topics, body)

    assert [(r.name, r.topic_id, int(r.error_code)) for r in response.responses] == [
        ("newest-doomed", topic_id, 0),
        (None, unknown_id, ErrorCode.UNKNOWN_TOPIC_ID),
        ("newest-missing", uuid.UUID(int=0), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ]
    assert not ctx.topics.exists("newest-doomed")


def test_init_producer_id_v6(
    monkeypatch: pytest.MonkeyPatch, loop: asyncio.AbstractEventLoop, ctx: BrokerContext
) -> None:
    body = schema("init_producer_id", 6).InitProducerIdRequest(
        transactional_id=None, transaction_timeout=ms(1000), producer_id=-1, producer_epoch=-1
    )

    response = call_at_newest(monkeypatch, loop, ctx, init_producer_id, body)

    assert (int(response.error_code), response.producer_epoch) == (0, 0)
    assert response.producer_id >= 0
