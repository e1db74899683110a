"""Kafka's default partitioner for keyed records: murmur2 of the key, made positive, mod N.

Pure functions, no state. Every Kafka client that means to agree with the Java client on where
a key goes (librdkafka's ``murmur2_random``, kafka-python, franz-go's ``KafkaHasher``) computes
``toPositive(murmur2(key)) % num_partitions`` with the Java client's exact variant of MurmurHash2:

- seed ``0x9747b28c`` xor the key's length, multiplier ``m = 0x5bd1e995``, shift ``r = 24``;
- the body is read as little-endian 32-bit words; the 1–3 tail bytes are folded in from the
  highest to the lowest, then multiplied by ``m``;
- the final avalanche is ``h ^= h >>> 13; h *= m; h ^= h >>> 15``;
- all arithmetic is modulo 2**32; ``murmur2`` returns the Java ``int`` (signed 32 bits);
- ``toPositive`` clears the sign bit (``& 0x7fffffff``), it is *not* ``abs``: Kafka chose it
  so that ``Integer.MIN_VALUE`` maps to 0 rather than staying negative.

Unkeyed records are not this module's business: the producer decides (sticky per batch).
"""

from __future__ import annotations

import struct
from typing import Final

__all__ = ["default_partition", "murmur2", "to_positive"]

SEED: Final = 0x9747B28C
M: Final = 0x5BD1E995
R: Final = 24
_MASK32: Final = 0xFFFFFFFF
_WORD = struct.Struct("<I")


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2``: the 32-bit MurmurHash2 of ``data`` as a signed Java ``int``."""
    length = len(data)
    h = (SEED ^ length) & _MASK32
    body = length - length % 4
    for (word,) in _WORD.iter_unpack(data[:body]):
        k = (word * M) & _MASK32
        k ^= k >> R
        k = (k * M) & _MASK32
        h = ((h * M) & _MASK32) ^ k
    tail = data[body:]
    if tail:
        # Java's switch falls through from case 3 to case 1: fold the tail bytes, then mix once.
        for index in range(len(tail) - 1, -1, -1):
            h ^= tail[index] << (8 * index)
        h = (h * M) & _MASK32
    h ^= h >> 13
    h = (h * M) & _MASK32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(number: int) -> int:
    """Kafka's ``Utils.toPositive``: ``number & 0x7fffffff`` (0 for ``Integer.MIN_VALUE``)."""
    return number & 0x7FFFFFFF


def default_partition(key: bytes, num_partitions: int) -> int:
    """The partition Kafka's default partitioner picks for a record with ``key``.

    Raises:
        ValueError: ``num_partitions`` is not positive.
    """
    if num_partitions <= 0:
        raise ValueError(f"a topic has at least one partition, got {num_partitions}")
    return to_positive(murmur2(key)) % num_partitions
