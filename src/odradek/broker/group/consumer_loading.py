"""Rebuilding KIP-848 consumer groups from their ``__consumer_offsets`` records.

Owns the replay rule: the last value of each key wins and a tombstone deletes the key; a
group exists when its ConsumerGroupMetadata record does; a member exists when its
MemberMetadata record does (target and current assignment records without it are dropped,
as after a partial deletion). The subscribed topics' metadata is not stored: it is marked
unknown and the first heartbeat after the load recomputes it (``consumer_membership``).
"""

from __future__ import annotations

import logging

from odradek.broker.group.consumer_group import ConsumerGroup, ConsumerGroupMember
from odradek.broker.group.consumer_records import (
    CURRENT_ASSIGNMENT_KEY_VERSION,
    MEMBER_METADATA_KEY_VERSION,
    METADATA_KEY_VERSION,
    TARGET_MEMBER_KEY_VERSION,
    TARGET_METADATA_KEY_VERSION,
    ConsumerGroupEpochValue,
    ConsumerGroupKey,
    ConsumerMemberMetadataValue,
    ConsumerRecordValue,
    CurrentAssignmentValue,
    TargetAssignmentValue,
    decode_consumer_value,
)

logger = logging.getLogger(__name__)

_Buffer = bytes | bytearray | memoryview


class ConsumerGroupLoader:
    """Collects the KIP-848 records of a replay (``add`` in log order), then ``build``s."""

    def __init__(self) -> None:
        self._values: dict[ConsumerGroupKey, ConsumerRecordValue] = {}

    def add(self, key: ConsumerGroupKey, value: _Buffer | None) -> None:
        """One record (None: a tombstone).

        Raises:
            CoordinatorRecordError: the value cannot be decoded.
        """
        if value is None:
            self._values.pop(key, None)
        else:
            self._values[key] = decode_consumer_value(key, value)

    def build(self, now_ms: int) -> dict[str, ConsumerGroup]:
        """The groups the records describe (sessions are the caller's to start)."""
        groups: dict[str, ConsumerGroup] = {}
        for key, value in self._values.items():
            if key.version == METADATA_KEY_VERSION:
                assert isinstance(value, ConsumerGroupEpochValue)
                group = groups[key.group_id] = ConsumerGroup(key.group_id, now_ms)
                group.group_epoch = value.epoch
                group.subscribed_metadata = None
        for key, value in self._values.items():
            found = groups.get(key.group_id)
            if found is None:
                continue
            group = found
            if key.version == TARGET_METADATA_KEY_VERSION:
                assert isinstance(value, ConsumerGroupEpochValue)
                group.assignment_epoch = value.epoch
            elif key.version == MEMBER_METADATA_KEY_VERSION:
                assert isinstance(value, ConsumerMemberMetadataValue)
                group.members[key.member_id] = ConsumerGroupMember(key.member_id).with_metadata(
                    value
                )
        for key, value in self._values.items():
            found = groups.get(key.group_id)
            if found is None or key.member_id not in found.members:
                continue
            group = found
            if key.version == TARGET_MEMBER_KEY_VERSION:
                assert isinstance(value, TargetAssignmentValue)
                group.target[key.member_id] = dict(value.partitions)
            elif key.version == CURRENT_ASSIGNMENT_KEY_VERSION:
                assert isinstance(value, CurrentAssignmentValue)
                group.members[key.member_id] = group.members[key.member_id].with_assignment(value)
        for group in groups.values():
            for member in list(group.members.values()):
                group.update_member(member)  # the static index and partition owners
            if not group.members:
                group.subscribed_metadata = {}
        if groups:
            logger.info("rebuilt %d consumer groups", len(groups))
        return groups
