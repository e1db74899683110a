"""Streaming offsets of the source, as the JSON Spark stores in its offset log.

A source offset maps each partition to the next offset to read. Its JSON form is Spark's Kafka
form, ``{"topicA":{"0":23,"1":5}}``, and it is *canonical*: topics sorted by name, partitions
by number. Spark compares offsets by their JSON text; two spellings of one position would make
it run an empty micro-batch on every trigger.
"""

from __future__ import annotations

from collections.abc import Mapping

from odradek.client import TopicPartition

__all__ = ["from_json", "to_json"]


def to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """The canonical JSON object (a dict in canonical insertion order) of ``offsets``."""
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = int(offsets[tp])
    return out


def from_json(data: Mapping[str, Mapping[str, int]]) -> dict[TopicPartition, int]:
    """Parses what ``to_json`` made (or Spark handed back).

    Raises:
        ValueError: not a mapping of topics to mappings of partition numbers to offsets.
    """
    out: dict[TopicPartition, int] = {}
    try:
        for topic, partitions in data.items():
            for partition, offset in partitions.items():
                out[TopicPartition(str(topic), int(partition))] = int(offset)
    except (AttributeError, TypeError, ValueError):
        raise ValueError(f"not an odradek source offset: {data!r}") from None
    return out
