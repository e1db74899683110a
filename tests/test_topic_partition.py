"""TopicPartition: a tuple subclass that keeps the value-type API it had as a frozen dataclass."""

from __future__ import annotations

import copy
import pickle

import pytest

from odradek._types import TopicPartition


def test_fields_text_and_repr() -> None:
    tp = TopicPartition("orders", 3)
    assert (tp.topic, tp.partition) == ("orders", 3)
    assert TopicPartition(topic="orders", partition=3) == tp
    assert str(tp) == "orders-3"
    assert repr(tp) == "TopicPartition(topic='orders', partition=3)"


def test_immutable() -> None:
    tp = TopicPartition("orders", 3)
    with pytest.raises(AttributeError):
        tp.topic = "other"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        tp.extra = 1  # type: ignore[attr-defined]


def test_hash_equality_and_order() -> None:
    a1, a2, b0 = TopicPartition("a", 1), TopicPartition("a", 2), TopicPartition("b", 0)
    assert {TopicPartition("a", 1): "x"}[a1] == "x"
    assert a1 != a2
    assert a1 != TopicPartition("b", 1)
    assert sorted([b0, a2, a1]) == [a1, a2, b0]
    assert len({a1, TopicPartition("a", 1), a2}) == 2


@pytest.mark.parametrize(
    "clone", [copy.copy, copy.deepcopy, lambda tp: pickle.loads(pickle.dumps(tp))]
)
def test_copies_keep_the_type(clone: object) -> None:
    tp = TopicPartition("orders", 3)
    copied = clone(tp)
    assert type(copied) is TopicPartition
    assert copied == tp
    assert copied.partition == 3


def test_pattern_matching() -> None:
    match TopicPartition("orders", 3):
        case TopicPartition(topic, partition):
            assert (topic, partition) == ("orders", 3)
        case _:
            pytest.fail("did not match")
