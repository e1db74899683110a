"""Errors of the segment indexes, part of the one error tree rooted at ``odradek.errors``.

None of these carries a Kafka error code of its own: they are raised to the segment and log
layers, which either recover (the loader rebuilds a corrupt index from the ``.log`` file) or
fail the log directory with ``KafkaStorageError``.
"""

from __future__ import annotations

from odradek.errors import OdradekError


class CorruptIndexError(OdradekError):
    """An index file on disk breaks its invariants (size, ordering); rebuild it from the log.

    Kafka's name for this is ``CorruptIndexException``.
    """


class InvalidIndexEntryError(OdradekError, ValueError):
    """An index entry was refused: it goes backwards, or does not fit the on-disk format.

    A bug in the caller, never a property of the data on disk (see ``CorruptIndexError``).
    Kafka's name for this is ``InvalidOffsetException``.
    """


class IndexFullError(OdradekError):
    """An append found the index full; the segment must roll before appending again."""
