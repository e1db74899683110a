"""Producer id blocks in the metadata store (``/latest_producer_id_block``), on the local store
and on a real ZooKeeper: Kafka's JSON, consecutive disjoint blocks for several brokers, ids not
reused after a restart (the store outlives the broker), a lost race retried, a corrupt node
refused."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from odradek.broker.producer_ids import ProducerIdManager
from odradek.controller.producer_id_block import (
    PRODUCER_ID_BLOCK_PATH,
    PRODUCER_ID_BLOCK_SIZE,
    ProducerIdBlock,
    allocate_producer_id_block,
    encode_block,
)
from odradek.controller.store import MetadataStore
from odradek.errors import CorruptMetadataError


def test_the_first_block_is_kafkas_json(store: MetadataStore) -> None:
    block = allocate_producer_id_block(store, 3)
    assert block == ProducerIdBlock(3, 0, PRODUCER_ID_BLOCK_SIZE - 1)
    data, _ = store.get(PRODUCER_ID_BLOCK_PATH)
    assert json.loads(data) == {
        "version": 1,
        "broker": 3,
        "block_start": "0",
        "block_end": "999",
    }


def test_brokers_get_disjoint_ids(store: MetadataStore) -> None:
    managers = [ProducerIdManager(store, broker) for broker in (0, 1, 2)]
    ids = [managers[i % 3].next_id() for i in range(30)]
    assert len(set(ids)) == 30
    assert ids[:3] == [0, 1000, 2000]
    assert managers[0].try_next_id() == 10  # from its block, no store access


def test_a_used_up_block_is_followed_by_a_new_one(store: MetadataStore) -> None:
    manager = ProducerIdManager(store, 0)
    assert manager.try_next_id() is None  # no block yet
    ids = [manager.next_id() for _ in range(PRODUCER_ID_BLOCK_SIZE + 1)]
    assert ids == list(range(PRODUCER_ID_BLOCK_SIZE + 1))


def test_ids_are_not_reused_after_a_restart(open_store: Callable[[], MetadataStore]) -> None:
    first = open_store()
    before = ProducerIdManager(first, 0).next_id()
    first.close()
    after = ProducerIdManager(open_store(), 0).next_id()
    assert after >= before + PRODUCER_ID_BLOCK_SIZE


class _Racing:
    """A store on which another broker takes a block between our read and our write, once."""

    def __init__(self, store: MetadataStore) -> None:
        self.store = store
        self.raced = False

    def __getattr__(self, name: str) -> object:
        return getattr(self.store, name)

    def get(self, path: str) -> tuple[bytes, int]:
        data, version = self.store.get(path)
        if not self.raced:
            self.raced = True
            allocate_producer_id_block(self.store, 9)
        return data, version


def test_a_lost_race_reads_again(store: MetadataStore) -> None:
    allocate_producer_id_block(store, 1)  # 0-999
    racing = _Racing(store)
    block = allocate_producer_id_block(racing, 2)  # type: ignore[arg-type]
    assert block == ProducerIdBlock(2, 2000, 2999)  # broker 9 took 1000-1999 meanwhile


def test_a_corrupt_node_is_refused(store: MetadataStore) -> None:
    store.create(PRODUCER_ID_BLOCK_PATH, b"not json")
    with pytest.raises(CorruptMetadataError):
        allocate_producer_id_block(store, 0)
    store.set(PRODUCER_ID_BLOCK_PATH, encode_block(ProducerIdBlock(0, 0, 2**63 - 1)))
    with pytest.raises(CorruptMetadataError, match="exhausted"):
        allocate_producer_id_block(store, 0)
