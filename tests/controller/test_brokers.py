"""LiveBrokers on each MetadataStore: the snapshot follows /brokers/ids, and the change
callback gets the ids added and removed."""

from __future__ import annotations

from tests.controller.test_store_contract import wait_for

from odradek.controller.brokers import LiveBrokers
from odradek.controller.store import MetadataStore
from odradek.controller.topics import ClusterMetadata, Endpoint


def test_the_snapshot_follows_registrations(store: MetadataStore) -> None:
    metadata = ClusterMetadata(store)
    metadata.ensure_top_level_paths()
    changes: list[tuple[list[int], list[int]]] = []
    metadata.register_broker(2, [Endpoint("PLAINTEXT", "127.0.0.1", 9002)])
    live = LiveBrokers(metadata, on_change=lambda added, removed: changes.append((added, removed)))
    live.start()
    assert live.ids() == [2]
    assert changes == [([2], [])]
    metadata.register_broker(0, [Endpoint("PLAINTEXT", "127.0.0.1", 9000)], rack="r0")
    metadata.register_broker(1, [Endpoint("PLAINTEXT", "127.0.0.1", 9001)])
    wait_for(lambda: live.ids() == [0, 1, 2])
    registration = live.get(0)
    assert registration is not None
    assert (registration.host, registration.port, registration.rack) == ("127.0.0.1", 9000, "r0")
    store.delete("/brokers/ids/2")  # as when broker 2's session ends
    wait_for(lambda: live.ids() == [0, 1])
    assert live.get(2) is None
    assert changes[-1] == ([], [2])
    assert [added for added, _ in changes if added] in ([[2], [0], [1]], [[2], [0, 1]])


def test_starts_before_any_broker(store: MetadataStore) -> None:
    live = LiveBrokers(ClusterMetadata(store))
    live.start()
    assert live.snapshot() == ()
    ClusterMetadata(store).register_broker(5, [Endpoint("PLAINTEXT", "h", 1)])
    wait_for(lambda: live.ids() == [5])
