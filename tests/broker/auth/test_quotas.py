"""Client quotas without a broker: Kafka's precedence of quota entities, who shares a quota,
the token bucket's throttle times, and the store layout with change notifications."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek import Broker
from odradek.broker.auth.quota_store import QuotaStore, entity_path
from odradek.broker.auth.quotas import (
    CONSUMER_BYTE_RATE,
    DEFAULT,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    ClientQuotas,
    QuotaEntity,
)
from odradek.client.admin import AdminClient
from odradek.controller.local import LocalMetadataStore

MB = 1_000_000


def quotas(**entities: float) -> ClientQuotas:
    """``user__client`` keyword names: ``alice__`` (user), ``__app`` (client), ``d`` = default."""
    q = ClientQuotas()
    for spec, rate in entities.items():
        user, _, client = spec.partition("__")
        entity = QuotaEntity(
            None if not user else DEFAULT if user == "d" else user,
            None if not client else DEFAULT if client == "d" else client,
        )
        q.set_quotas(entity, {PRODUCER_BYTE_RATE: rate})
    return q


@pytest.mark.parametrize(
    ("configured", "expected"),
    [
        ({"alice__app": 1, "alice__d": 2, "alice__": 3, "__app": 9}, 1),
        ({"alice__d": 2, "alice__": 3, "d__app": 4}, 2),
        ({"alice__": 3, "d__app": 4, "d__d": 5}, 3),
        ({"d__app": 4, "d__d": 5, "d__": 6}, 4),
        ({"d__d": 5, "d__": 6, "__app": 7}, 5),
        ({"d__": 6, "__app": 7}, 6),
        ({"__app": 7, "__d": 8}, 7),
        ({"__d": 8, "bob__": 1}, 8),
    ],
)
def test_the_most_specific_entity_wins(configured: dict[str, float], expected: float) -> None:
    found = quotas(**configured).quota(PRODUCER_BYTE_RATE, "alice", "app")
    assert found is not None
    assert found[1] == expected


def test_no_quota_no_throttle_and_inactive() -> None:
    q = ClientQuotas()
    assert not q.active
    assert q.record(PRODUCER_BYTE_RATE, "alice", "app", 10 * MB, 0) == 0
    q.set_quotas(QuotaEntity(None, "other"), {PRODUCER_BYTE_RATE: MB})
    assert q.active
    assert q.record(PRODUCER_BYTE_RATE, "alice", "app", 10 * MB, 0) == 0
    assert q.record(CONSUMER_BYTE_RATE, "alice", "other", 10 * MB, 0) == 0


def test_the_throttle_repays_the_debt_at_the_quota() -> None:
    q = quotas(__app=MB)  # a burst of one second's worth
    assert q.record(PRODUCER_BYTE_RATE, "u", "app", MB // 2, 0) == 0
    assert q.record(PRODUCER_BYTE_RATE, "u", "app", MB // 2, 0) == 0
    # 1.5 MB in debt at 1 MB/s: 1.5 s.
    assert q.record(PRODUCER_BYTE_RATE, "u", "app", 3 * MB // 2, 0) == 1501
    assert q.mute_ms("u", "app", 500) == 1001
    assert q.mute_ms("u", "app", 1501) == 0
    # Long-run: N MB over N seconds is within the quota at every step after the burst.
    for second in range(2, 12):
        assert q.record(PRODUCER_BYTE_RATE, "u", "app", MB, second * 1000 + 501) == 0


def test_a_user_quota_is_shared_by_its_client_ids_a_default_is_not() -> None:
    shared = quotas(alice__=MB)
    shared.record(PRODUCER_BYTE_RATE, "alice", "a", MB, 0)
    assert shared.record(PRODUCER_BYTE_RATE, "alice", "b", MB, 0) > 0
    per_client = quotas(__d=MB)
    per_client.record(PRODUCER_BYTE_RATE, "alice", "a", MB, 0)
    assert per_client.record(PRODUCER_BYTE_RATE, "alice", "b", MB, 0) == 0


@pytest.fixture
def store(tmp_path: Path) -> Iterator[LocalMetadataStore]:
    opened = LocalMetadataStore(tmp_path)
    yield opened
    opened.close()


def test_quotas_are_stored_as_kafka_stored_them_and_seen_by_other_brokers(
    store: LocalMetadataStore,
) -> None:
    writer, reader = QuotaStore(store, ClientQuotas()), QuotaStore(store, ClientQuotas())
    writer.start()
    reader.start()
    both = QuotaEntity("CN=a b", "app")
    writer.alter(both, {PRODUCER_BYTE_RATE: 1024}, [])
    writer.alter(QuotaEntity(DEFAULT, None), {CONSUMER_BYTE_RATE: 2048}, [])
    assert entity_path(both) == "/config/users/CN%3Da%20b/clients/app"
    data = json.loads(store.get("/config/users/CN%3Da%20b/clients/app")[0])
    assert data == {"version": 1, "config": {"producer_byte_rate": "1024.0"}}
    assert store.exists("/config/users/<default>")
    change = json.loads(store.get("/config/changes/config_change_0000000000")[0])
    assert change == {"version": 2, "entity_path": "users/CN%3Da%20b/clients/app"}
    assert reader.quotas.configs() == {
        both: {PRODUCER_BYTE_RATE: 1024.0},
        QuotaEntity(DEFAULT, None): {CONSUMER_BYTE_RATE: 2048.0},
    }
    writer.alter(both, {}, [PRODUCER_BYTE_RATE])
    assert not store.exists("/config/users/CN%3Da%20b/clients/app")
    assert both not in reader.quotas.configs()
    restarted = QuotaStore(store, ClientQuotas())
    restarted.start()
    assert restarted.quotas.configs() == {QuotaEntity(DEFAULT, None): {CONSUMER_BYTE_RATE: 2048.0}}


@pytest.mark.parametrize(
    ("values", "message"),
    [({"bytes": 1.0}, "unknown quota key"), ({PRODUCER_BYTE_RATE: 0.0}, "positive")],
)
def test_bad_quotas_are_refused(
    store: LocalMetadataStore, values: dict[str, float], message: str
) -> None:
    quota_store = QuotaStore(store, ClientQuotas())
    quota_store.start()
    with pytest.raises(ValueError, match=message):
        quota_store.alter(QuotaEntity("u", None), values, [])


def test_request_percentage_is_handling_time_per_second() -> None:
    q = ClientQuotas()
    q.set_quotas(QuotaEntity(None, "c"), {REQUEST_PERCENTAGE: 10})  # 100 ms/s, 100 ms burst
    assert q.request_time_active
    assert q.record(REQUEST_PERCENTAGE, "u", "c", 50.0, 0) == 0
    assert q.record(REQUEST_PERCENTAGE, "u", "c", 100.0, 0) == 501  # 50 ms over at 100 ms/s
    assert q.mute_ms("u", "c", 0) == 501
    # Kafka bounds a request-time throttle by the window (1 s): the debt stops there.
    assert q.record(REQUEST_PERCENTAGE, "u", "c", 10_000.0, 0) == 1001


def test_the_server_times_handlers_against_request_percentage() -> None:
    with Broker() as broker:
        quotas = broker.app.ctx.quotas if broker.app.ctx is not None else None
        assert quotas is not None
        # 50 %: 500 ms of handling per second, which a few requests do not reach.
        quotas.set_quotas(QuotaEntity(None, "slowpoke"), {REQUEST_PERCENTAGE: 50})
        with AdminClient(
            {"bootstrap.servers": broker.bootstrap_servers, "client.id": "slowpoke"}
        ) as admin:
            admin.list_topics()
        assert quotas.statistics()["holders"] == 1  # its requests were timed
        # Counted against its bucket: a request taking 600 ms more would put it over.
        now_ms = broker.app.clock.monotonic_ms()
        assert quotas.record(REQUEST_PERCENTAGE, "ANONYMOUS", "slowpoke", 600.0, now_ms) > 0
