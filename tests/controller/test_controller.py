"""Controller on each MetadataStore (local, and ZooKeeper in a chroot of the test's own):
election through /controller, one epoch more per election, fenced writes, resignation, and
taking over when the controller goes."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest
from tests.controller.test_store_contract import wait_for

from odradek._clock import MockClock
from odradek.controller.controller import Controller
from odradek.controller.election import CONTROLLER_EPOCH_PATH, CONTROLLER_PATH, ControllerEpoch
from odradek.controller.store import CreateOp, DeleteOp, MetadataStore, SetOp
from odradek.errors import BadVersionError, MetadataStoreError, NotControllerError

StoreFactory = Callable[[], MetadataStore]


class Broker:
    """A controller with a record of its callbacks."""

    def __init__(self, store: MetadataStore, broker_id: int) -> None:
        self.store = store
        self.elected: list[ControllerEpoch] = []
        self.resigned = 0
        self.controller = Controller(
            store,
            broker_id,
            on_elected=self.elected.append,
            on_resigned=self._on_resigned,
            clock=MockClock(now_ms=1_700_000_000_000 + broker_id),
        )

    def _on_resigned(self) -> None:
        self.resigned += 1


@pytest.fixture
def brokers(open_store: StoreFactory) -> Iterator[Callable[[int], Broker]]:
    """Makes brokers: each with its own store session (ZooKeeper), or all on one store
    (local: one open store per directory)."""
    started: list[Broker] = []
    shared: list[MetadataStore] = []

    def make(broker_id: int) -> Broker:
        try:
            store = open_store()
        except MetadataStoreError:
            store = shared[0]
        shared.append(store)
        broker = Broker(store, broker_id)
        broker.controller.start()
        started.append(broker)
        return broker

    yield make
    for broker in started:
        broker.controller.stop()


def _admin(open_store: StoreFactory, fallback: MetadataStore) -> MetadataStore:
    try:
        return open_store()
    except MetadataStoreError:
        return fallback


def test_the_first_broker_becomes_controller_with_epoch_1(
    brokers: Callable[[int], Broker],
) -> None:
    first = brokers(1)
    wait_for(lambda: first.controller.active)
    assert first.elected == [ControllerEpoch(1, 1)]
    assert json.loads(first.store.get(CONTROLLER_PATH)[0]) == {
        "version": 1,
        "brokerid": 1,
        "timestamp": "1700000000001",
    }
    assert first.store.get(CONTROLLER_EPOCH_PATH) == (b"1", 1)
    second = brokers(2)
    wait_for(lambda: second.controller.controller_id() == 1)
    assert not second.controller.active
    assert second.elected == []
    assert first.controller.statistics().elections_won == 1


def test_a_fenced_write_of_a_deposed_controller_is_refused(
    brokers: Callable[[int], Broker], open_store: StoreFactory
) -> None:
    first = brokers(1)
    wait_for(lambda: first.controller.active)
    first.controller.write([CreateOp("/state", b"from epoch 1")])
    admin = _admin(open_store, first.store)
    # Another broker's election, as one multi: its /controller, the epoch one higher.
    _, epoch_version = admin.get(CONTROLLER_EPOCH_PATH)
    admin.multi(
        [
            DeleteOp(CONTROLLER_PATH),
            CreateOp(CONTROLLER_PATH, b'{"version":1,"brokerid":2,"timestamp":"0"}'),
            SetOp(CONTROLLER_EPOCH_PATH, b"2", epoch_version),
        ]
    )
    with pytest.raises(NotControllerError, match="epoch 1 is stale"):
        first.controller.write([SetOp("/state", b"stale write")])
    assert admin.get("/state") == (b"from epoch 1", 0)
    wait_for(lambda: not first.controller.active)
    assert first.resigned == 1
    with pytest.raises(NotControllerError, match="not the controller"):
        first.controller.write([SetOp("/state", b"again")])
    assert first.controller.statistics().fenced_writes == 1


def test_a_failed_op_of_the_controller_is_not_fencing(brokers: Callable[[int], Broker]) -> None:
    first = brokers(1)
    wait_for(lambda: first.controller.active)
    first.controller.write([CreateOp("/state", b"v0")])
    with pytest.raises(BadVersionError):
        first.controller.write([SetOp("/state", b"v1", version=5)])
    assert first.controller.active
    assert first.controller.write([SetOp("/state", b"v1", version=0)]) == [1]


def test_another_broker_takes_over_with_a_new_epoch(
    brokers: Callable[[int], Broker], open_store: StoreFactory
) -> None:
    first = brokers(1)
    wait_for(lambda: first.controller.active)
    second = brokers(2)
    wait_for(lambda: second.controller.controller_id() == 1)
    first.controller.stop()  # its thread no longer runs for election
    admin = _admin(open_store, first.store)
    admin.delete(CONTROLLER_PATH)  # as when the controller's session ends
    wait_for(lambda: second.controller.active)
    assert second.elected == [ControllerEpoch(2, 2)]
    assert admin.get(CONTROLLER_EPOCH_PATH)[0] == b"2"
    assert second.controller.controller_id() == 2


def test_concurrent_candidates_elect_exactly_one(brokers: Callable[[int], Broker]) -> None:
    candidates = [brokers(broker_id) for broker_id in range(1, 6)]
    wait_for(lambda: sum(broker.controller.active for broker in candidates) == 1)
    winner = next(broker for broker in candidates if broker.controller.active)
    assert winner.elected == [ControllerEpoch(1, 1)]
    assert all(broker.elected == [] for broker in candidates if broker is not winner)
