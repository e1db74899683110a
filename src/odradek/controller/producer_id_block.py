"""Cluster-wide producer id blocks in the metadata store (Kafka's ``/latest_producer_id_block``).

Every broker hands out producer ids (InitProducerId) from a block of 1000 it reserved in the
store: it reads the node, writes the next block with a version-conditional ``set`` (or creates
the node for the first block), and on a lost race reads again. The node holds the last block
given out, as Kafka's JSON::

    {"version":1,"broker":0,"block_start":"0","block_end":"999"}

(start and end as strings, as Kafka writes them). No two brokers — and no restart of one, since
the node outlives it (the local store persists it to disk) — ever get overlapping blocks.

This module owns the node's format and the allocation rule; it blocks on the store (ZooKeeper),
so callers run it off the event loop.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

from odradek.controller.store import MetadataStore
from odradek.errors import BadVersionError, CorruptMetadataError, NodeExistsError, NoNodeError

__all__ = [
    "PRODUCER_ID_BLOCK_PATH",
    "PRODUCER_ID_BLOCK_SIZE",
    "ProducerIdBlock",
    "allocate_producer_id_block",
    "decode_block",
    "encode_block",
]

logger = logging.getLogger(__name__)

PRODUCER_ID_BLOCK_PATH = "/latest_producer_id_block"
PRODUCER_ID_BLOCK_SIZE = 1000
#: Producer ids are int64; Kafka refuses to go past this.
_MAX_PRODUCER_ID = 2**63 - 1


@dataclass(frozen=True, slots=True)
class ProducerIdBlock:
    """Producer ids ``first`` .. ``last`` (inclusive), reserved by ``broker_id``."""

    broker_id: int
    first: int
    last: int


def encode_block(block: ProducerIdBlock) -> bytes:
    return json.dumps(
        {
            "version": 1,
            "broker": block.broker_id,
            "block_start": str(block.first),
            "block_end": str(block.last),
        },
        separators=(",", ":"),
    ).encode()


def decode_block(data: bytes) -> ProducerIdBlock:
    """Raises CorruptMetadataError for anything but the documented JSON."""
    try:
        document = json.loads(data)
        return ProducerIdBlock(
            int(document["broker"]), int(document["block_start"]), int(document["block_end"])
        )
    except (ValueError, KeyError, TypeError) as error:
        raise CorruptMetadataError(
            f"{PRODUCER_ID_BLOCK_PATH} holds {data[:200]!r}, not a producer id block: {error}"
        ) from None


def allocate_producer_id_block(
    store: MetadataStore, broker_id: int, *, max_attempts: int = 100
) -> ProducerIdBlock:
    """Reserves the next block of ``PRODUCER_ID_BLOCK_SIZE`` ids for ``broker_id``.

    Raises:
        CorruptMetadataError: the node holds something else, or the ids ran out.
        BadVersionError: ``max_attempts`` races in a row were lost (other brokers
            allocating all the time).
    """
    for _ in range(max_attempts):
        try:
            data, version = store.get(PRODUCER_ID_BLOCK_PATH)
        except NoNodeError:
            block = ProducerIdBlock(broker_id, 0, PRODUCER_ID_BLOCK_SIZE - 1)
            try:
                store.create(PRODUCER_ID_BLOCK_PATH, encode_block(block))
            except NodeExistsError:
                continue  # another broker created it first: read it
            return block
        previous = decode_block(data)
        if previous.last > _MAX_PRODUCER_ID - PRODUCER_ID_BLOCK_SIZE:
            raise CorruptMetadataError("producer ids are exhausted")
        block = ProducerIdBlock(
            broker_id, previous.last + 1, previous.last + PRODUCER_ID_BLOCK_SIZE
        )
        try:
            store.set(PRODUCER_ID_BLOCK_PATH, encode_block(block), version)
        except (BadVersionError, NoNodeError):
            continue  # another broker took the next block first
        logger.info("broker %d reserved producer ids %d-%d", broker_id, block.first, block.last)
        return block
    raise BadVersionError(
        f"no producer id block reserved after {max_attempts} attempts at {PRODUCER_ID_BLOCK_PATH}"
    )
