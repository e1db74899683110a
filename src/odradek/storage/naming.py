"""File and directory names of the log, as Kafka lays them out.

A partition's log lives in ``<log.dir>/<topic>-<partition>/``; each segment is a set of files
named by its base offset as 20 zero-padded digits: ``00000000000000000000.log``, ``.index``,
``.timeindex``. A segment being removed has ``.deleted`` appended to each file name.
"""

from __future__ import annotations

import os
import re

from odradek._types import TopicPartition

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX)

_SEGMENT_FILE = re.compile(r"^(\d{20})(\.log|\.index|\.timeindex)(\.deleted|\.cleaned|\.swap)?$")
_PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")


def segment_file_name(base_offset: int, suffix: str) -> str:
    """``00000000000000000042.log`` for base offset 42 and suffix ``.log``."""
    return f"{base_offset:020d}{suffix}"


def segment_path(directory: str, base_offset: int, suffix: str) -> str:
    return os.path.join(directory, segment_file_name(base_offset, suffix))


def parse_segment_file_name(name: str) -> tuple[int, str, str] | None:
    """Returns ``(base_offset, suffix, state_suffix)`` or None when not a segment file.

    ``state_suffix`` is ``""``, ``.deleted``, ``.cleaned`` or ``.swap``.
    """
    match = _SEGMENT_FILE.match(name)
    if match is None:
        return None
    return int(match.group(1)), match.group(2), match.group(3) or ""


def partition_dir_name(topic_partition: TopicPartition) -> str:
    return f"{topic_partition.topic}-{topic_partition.partition}"


def parse_partition_dir_name(name: str) -> TopicPartition | None:
    """``orders-3`` → TopicPartition("orders", 3); topics may contain ``-`` themselves."""
    match = _PARTITION_DIR.match(name)
    if match is None:
        return None
    return TopicPartition(match.group(1), int(match.group(2)))
