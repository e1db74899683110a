"""``partition.metadata``: the topic id (KIP-516) of the topic a partition directory belongs
to, as Kafka writes it beside the segments, so a directory left from a deleted topic is never
taken for a new topic of the same name.

Text layout (Kafka's ``PartitionMetadataFile``)::

    version: 0
    topic_id: AAECAwQFBgcICQoLDA0ODw        22 characters of URL-safe base64, no padding

Written atomically (``checkpoints.atomic_write``: temporary file, fsync, rename, fsync of the
directory); the segment loader ignores the file. Synchronous: call it off the event loop.
"""

from __future__ import annotations

import os

from odradek.storage.checkpoints import atomic_write

FILE_NAME = "partition.metadata"
_VERSION = 0
_ID_CHARACTERS = 22


def write_partition_metadata(directory: str, topic_id: str) -> None:
    """Writes the file in ``directory`` (replacing any).

    Raises:
        ValueError: ``topic_id`` is not 22 characters of URL-safe base64.
        OSError: the file could not be written.
    """
    if len(topic_id) != _ID_CHARACTERS or not all(
        c.isascii() and (c.isalnum() or c in "-_") for c in topic_id
    ):
        raise ValueError(f"not a topic id: {topic_id!r}")
    text = f"version: {_VERSION}\ntopic_id: {topic_id}\n"
    atomic_write(os.path.join(directory, FILE_NAME), text.encode())


def read_partition_metadata(directory: str) -> str | None:
    """The topic id the file in ``directory`` holds; ``None`` when there is no file.

    Raises:
        ValueError: the file is not in the layout above (or of another version).
    """
    path = os.path.join(directory, FILE_NAME)
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except FileNotFoundError:
        return None
    fields = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
    if fields.get("version") != str(_VERSION) or "topic_id" not in fields:
        raise ValueError(f"{path}: not a version {_VERSION} partition.metadata file: {text!r}")
    topic_id = fields["topic_id"]
    if len(topic_id) != _ID_CHARACTERS:
        raise ValueError(f"{path}: malformed topic id {topic_id!r}")
    return topic_id
