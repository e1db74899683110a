"""``GroupAdmin``: the consumer-group calls of ``AdminClient`` (Kafka's admin API for groups).

``AdminClient`` delegates them to its ``GroupAdmin`` part, which sends through the client's
``AdminRequests``; this module owns how group requests are routed and what they return.
Every call but ``list_groups`` goes to the group's coordinator, found with FindCoordinator
(key type 0) at the start of each attempt; an answer of NOT_COORDINATOR,
COORDINATOR_NOT_AVAILABLE or COORDINATOR_LOAD_IN_PROGRESS (the coordinator moved or is still
loading ``__consumer_offsets``) finds the coordinator again and retries after
``retry.backoff.ms`` until the call's deadline. ``list_groups`` asks every broker (each lists
only the groups it coordinates).

Errors follow ``AdminClient``: network failures are retried, then raise; per-item outcomes
(a group, a partition) come back in an ``AdminResult`` whose failed items raise their
``KafkaError`` on lookup (NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND, UNKNOWN_MEMBER_ID, ...).

Thread safety: as ``AdminClient`` (each call holds the client's lock, ``AdminRequests.lock``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from odradek._types import TopicPartition
from odradek.client.admin_requests import AdminRequests
from odradek.client.admin_types import AdminResult
from odradek.client.assignors.protocol import CONSUMER_PROTOCOL_TYPE, decode_assignment
from odradek.client.cluster import BrokerMetadata
from odradek.errors import ErrorCode, KafkaError, ProtocolError, error_for_code
from odradek.protocol.api_keys import ApiKey, VersionRange

__all__ = [
    "ConsumerGroupDescription",
    "GroupAdmin",
    "GroupListing",
    "MemberDescription",
    "OffsetAndMetadata",
]

# Versions this module builds requests for and reads answers of (field names as
# ``client_codec`` takes them; batched FindCoordinator v4+ and OffsetFetch v8+ are not used).
FIND_COORDINATOR_VERSIONS: Final = VersionRange(0, 3)
LIST_GROUPS_VERSIONS: Final = VersionRange(0, 4)
DESCRIBE_GROUPS_VERSIONS: Final = VersionRange(0, 5)
OFFSET_FETCH_VERSIONS: Final = VersionRange(1, 7)
OFFSET_COMMIT_VERSIONS: Final = VersionRange(2, 7)
DELETE_GROUPS_VERSIONS: Final = VersionRange(0, 2)
OFFSET_DELETE_VERSIONS: Final = VersionRange(0, 0)

GROUP_KEY_TYPE: Final = 0
#: OffsetCommit from outside the group (the admin tool's reset): no generation, no member.
NO_GENERATION: Final = -1
#: Group-level codes that mean "find the coordinator again and retry".
_COORDINATOR_CODES: Final = frozenset(
    {
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    }
)


@dataclass(frozen=True, slots=True)
class GroupListing:
    """A group as ListGroups reports it (``state`` only from ListGroups v4+, else ``None``)."""

    group_id: str
    protocol_type: str
    state: str | None = None

    @property
    def is_consumer_group(self) -> bool:
        return self.protocol_type in (CONSUMER_PROTOCOL_TYPE, "")


@dataclass(frozen=True, slots=True)
class MemberDescription:
    """A group member: ids, where it runs, and (consumer protocol) its partitions."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescription:
    """DescribeGroups' answer for one group.

    ``state`` is Kafka's name (Empty, PreparingRebalance, CompletingRebalance, Stable, Dead;
    Dead also for a group that does not exist); ``protocol`` is the chosen partition assignor
    of a consumer group; ``coordinator`` the broker that answered.
    """

    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberDescription, ...]
    coordinator: BrokerMetadata | None

    @property
    def is_simple_consumer_group(self) -> bool:
        return self.protocol_type == ""


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """A committed offset: the next offset the group reads, its metadata and leader epoch."""

    offset: int
    metadata: str | None = None
    leader_epoch: int | None = None


class GroupAdmin:
    """The group calls (see the module docstring)."""

    def __init__(self, requests: AdminRequests) -> None:
        self._requests = requests

    # ------------------------------------------------------------------ calls

    def list_groups(self, *, timeout_ms: int | None = None) -> list[GroupListing]:
        """Every group of the cluster (ListGroups to every broker), sorted by id.

        Raises:
            KafkaError: a broker's error, once retries (for a loading coordinator) ran out.
        """
        deadline = self._requests.deadline(timeout_ms)
        listings: dict[str, GroupListing] = {}
        with self._requests.lock:
            for node in sorted(self._requests.refresh(deadline).brokers):
                while True:
                    body = self._requests.call(
                        _constant(node),
                        ApiKey.LIST_GROUPS,
                        LIST_GROUPS_VERSIONS,
                        {"states_filter": [], "types_filter": []},
                        deadline,
                    )
                    code = int(body.get("error_code", 0))
                    if code in _COORDINATOR_CODES and self._requests.remaining(deadline) > 0:
                        self._requests.pause(deadline)
                        continue
                    if code:
                        raise _error(code, f"ListGroups from broker {node}")
                    break
                for entry in body["groups"]:
                    group_id = str(entry["group_id"])
                    listings[group_id] = GroupListing(
                        group_id, str(entry["protocol_type"]), entry.get("group_state")
                    )
        return [listings[group_id] for group_id in sorted(listings)]

    def describe_groups(
        self, group_ids: Sequence[str], *, timeout_ms: int | None = None
    ) -> AdminResult[str, ConsumerGroupDescription]:
        """State, protocol and members of each group (DescribeGroups to its coordinator).

        A consumer group's member assignments are decoded to topic-partitions; bytes that do
        not decode leave the member's assignment empty.

        Returns:
            Per group: its description, or the group's ``KafkaError`` on lookup.
        """
        deadline = self._requests.deadline(timeout_ms)
        values: dict[str, ConsumerGroupDescription] = {}
        errors: dict[str, KafkaError] = {}
        with self._requests.lock:
            for group_id in dict.fromkeys(group_ids):
                try:
                    coordinator, entry = self._with_coordinator(
                        group_id,
                        ApiKey.DESCRIBE_GROUPS,
                        DESCRIBE_GROUPS_VERSIONS,
                        {"groups": [group_id], "include_authorized_operations": False},
                        deadline,
                        lambda body: _only(body["groups"]),
                    )
                except KafkaError as error:
                    errors[group_id] = error
                    continue
                code = int(entry["error_code"])
                if code:
                    errors[group_id] = _error(code, f"group {group_id!r}")
                else:
                    values[group_id] = _description(entry, coordinator)
        return AdminResult(list(dict.fromkeys(group_ids)), values, errors)

    def list_group_offsets(
        self,
        group_id: str,
        partitions: Iterable[TopicPartition] | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> AdminResult[TopicPartition, OffsetAndMetadata | None]:
        """A group's committed offsets (OffsetFetch to its coordinator).

        Args:
            partitions: the partitions to look up; ``None``: every partition with a commit.

        Returns:
            Per partition: its ``OffsetAndMetadata``, ``None`` if nothing is committed, or
            the partition's ``KafkaError`` on lookup.

        Raises:
            KafkaError: the group's error (GROUP_AUTHORIZATION_FAILED, ...).
        """
        deadline = self._requests.deadline(timeout_ms)
        wanted = None if partitions is None else list(dict.fromkeys(partitions))
        fields = {
            "group_id": group_id,
            "topics": None
            if wanted is None
            else _by_topic(wanted, "partition_indexes", lambda tp: tp.partition),
            "require_stable": False,
        }
        with self._requests.lock:
            _, body = self._with_coordinator(
                group_id,
                ApiKey.OFFSET_FETCH,
                OFFSET_FETCH_VERSIONS,
                fields,
                deadline,
                lambda body: body,
            )
        code = int(body.get("error_code", 0))
        if code:
            raise _error(code, f"group {group_id!r}")
        values: dict[TopicPartition, OffsetAndMetadata | None] = {}
        errors: dict[TopicPartition, KafkaError] = {}
        for tp, entry in _partition_entries(body):
            code = int(entry["error_code"])
            offset = int(entry["committed_offset"])
            if code:
                errors[tp] = _error(code, str(tp))
            elif offset < 0:
                values[tp] = None
            else:
                epoch = int(entry.get("committed_leader_epoch", -1))
                values[tp] = OffsetAndMetadata(
                    offset, entry.get("metadata"), epoch if epoch >= 0 else None
                )
        order = wanted if wanted is not None else sorted(values.keys() | errors.keys())
        for tp in order:
            if tp not in values and tp not in errors:
                errors[tp] = KafkaError(f"{tp}: not in the response")
        return AdminResult(order, values, errors)

    def alter_group_offsets(
        self,
        group_id: str,
        offsets: Mapping[TopicPartition, int | OffsetAndMetadata],
        *,
        timeout_ms: int | None = None,
    ) -> AdminResult[TopicPartition, None]:
        """Commits offsets for a group from outside it (OffsetCommit, generation -1).

        The coordinator takes such a commit only while the group has no members (Empty, or
        unknown: then it is created); otherwise each partition fails (ILLEGAL_GENERATION or
        UNKNOWN_MEMBER_ID, as the coordinator decides). Check the group's state first.

        Returns:
            Per partition: ``None``, or its ``KafkaError`` on lookup.
        """
        deadline = self._requests.deadline(timeout_ms)
        wanted = {
            tp: value if isinstance(value, OffsetAndMetadata) else OffsetAndMetadata(int(value))
            for tp, value in offsets.items()
        }
        fields = {
            "group_id": group_id,
            "generation_id_or_member_epoch": NO_GENERATION,
            "member_id": "",
            "group_instance_id": None,
            "retention_time": -1,
            "topics": _by_topic(
                list(wanted),
                "partitions",
                lambda tp: {
                    "partition_index": tp.partition,
                    "committed_offset": wanted[tp].offset,
                    "committed_leader_epoch": -1
                    if wanted[tp].leader_epoch is None
                    else wanted[tp].leader_epoch,
                    "committed_metadata": wanted[tp].metadata or "",
                },
            ),
        }
        with self._requests.lock:
            _, body = self._with_coordinator(
                group_id,
                ApiKey.OFFSET_COMMIT,
                OFFSET_COMMIT_VERSIONS,
                fields,
                deadline,
                lambda body: body,
                retry=lambda body: _all_partition_codes(body) & _COORDINATOR_CODES != set(),
            )
        return _partition_results(list(wanted), body)

    def delete_groups(
        self, group_ids: Sequence[str], *, timeout_ms: int | None = None
    ) -> AdminResult[str, None]:
        """Deletes groups and their committed offsets (DeleteGroups to each coordinator).

        Returns:
            Per group: ``None``, or NON_EMPTY_GROUP (it has members), GROUP_ID_NOT_FOUND, ...
            on lookup.
        """
        deadline = self._requests.deadline(timeout_ms)
        order = list(dict.fromkeys(group_ids))
        values: dict[str, None] = {}
        errors: dict[str, KafkaError] = {}
        with self._requests.lock:
            for group_id in order:
                try:
                    _, entry = self._with_coordinator(
                        group_id,
                        ApiKey.DELETE_GROUPS,
                        DELETE_GROUPS_VERSIONS,
                        {"groups_names": [group_id]},
                        deadline,
                        lambda body: _only(body["results"]),
                    )
                except KafkaError as error:
                    errors[group_id] = error
                    continue
                code = int(entry["error_code"])
                if code:
                    errors[group_id] = _error(code, f"group {group_id!r}")
                else:
                    values[group_id] = None
        return AdminResult(order, values, errors)

    def delete_group_offsets(
        self,
        group_id: str,
        partitions: Iterable[TopicPartition],
        *,
        timeout_ms: int | None = None,
    ) -> AdminResult[TopicPartition, None]:
        """Deletes a group's committed offsets of some partitions (OffsetDelete, KIP-496);
        a partition of a topic the group's members subscribe to fails
        (GROUP_SUBSCRIBED_TO_TOPIC).

        Returns:
            Per partition: ``None``, or its ``KafkaError`` on lookup.

        Raises:
            KafkaError: the group's error (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, ...).
        """
        deadline = self._requests.deadline(timeout_ms)
        wanted = list(dict.fromkeys(partitions))
        fields = {
            "group_id": group_id,
            "topics": _by_topic(wanted, "partitions", lambda tp: {"partition_index": tp.partition}),
        }
        with self._requests.lock:
            _, body = self._with_coordinator(
                group_id,
                ApiKey.OFFSET_DELETE,
                OFFSET_DELETE_VERSIONS,
                fields,
                deadline,
                lambda body: body,
            )
        code = int(body.get("error_code", 0))
        if code:
            raise _error(code, f"group {group_id!r}")
        return _partition_results(wanted, body)

    # ------------------------------------------------------------------ routing

    def _find_coordinator(self, group_id: str, deadline: int) -> BrokerMetadata:
        """The broker coordinating ``group_id`` (FindCoordinator, retried while the
        coordinator is not available yet).

        Raises:
            KafkaError: a non-retriable answer, or the last one when the deadline passes.
        """
        while True:
            body = self._requests.call(
                self._requests.any_node,
                ApiKey.FIND_COORDINATOR,
                FIND_COORDINATOR_VERSIONS,
                {"key": group_id, "key_type": GROUP_KEY_TYPE},
                deadline,
            )
            code = int(body.get("error_code", 0))
            if not code:
                return BrokerMetadata(int(body["node_id"]), str(body["host"]), int(body["port"]))
            error = _error(code, f"coordinator of group {group_id!r}", body.get("error_message"))
            if code not in _COORDINATOR_CODES or self._requests.remaining(deadline) <= 0:
                raise error
            self._requests.pause(deadline)

    def _with_coordinator(
        self,
        group_id: str,
        api_key: ApiKey,
        versions: VersionRange,
        fields: Mapping[str, Any],
        deadline: int,
        pick: Callable[[dict[str, Any]], dict[str, Any]],
        *,
        retry: Callable[[dict[str, Any]], bool] | None = None,
    ) -> tuple[BrokerMetadata, dict[str, Any]]:
        """Sends a request to the group's coordinator; returns the coordinator and
        ``pick(body)``, asking again while ``pick(body)["error_code"]`` (or ``retry(body)``)
        says the coordinator moved or is loading."""
        while True:
            coordinator = self._find_coordinator(group_id, deadline)
            if coordinator.node_id not in self._requests.refresh(deadline).brokers:
                raise KafkaError(
                    f"coordinator {coordinator.node_id} of group {group_id!r} is not in metadata",
                    code=ErrorCode.COORDINATOR_NOT_AVAILABLE,
                )
            body = self._requests.call(
                _constant(coordinator.node_id), api_key, versions, fields, deadline
            )
            picked = pick(body)
            moved = int(picked.get("error_code", 0)) in _COORDINATOR_CODES or (
                retry is not None and retry(body)
            )
            if not moved or self._requests.remaining(deadline) <= 0:
                return coordinator, picked
            self._requests.pause(deadline)


# ---------------------------------------------------------------------- helpers


def _constant(node: int) -> Callable[[], int | None]:
    return lambda: node


def _error(code: int, item: str, message: str | None = None) -> KafkaError:
    name = ErrorCode(code).name if code in ErrorCode._value2member_map_ else str(code)
    return error_for_code(code, f"{item}: {message or name}")


def _only(entries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    if len(entries) != 1:
        raise KafkaError(f"expected one entry in the response, got {len(entries)}")
    return entries[0]


def _by_topic(
    partitions: Iterable[TopicPartition], key: str, entry: Callable[[TopicPartition], Any]
) -> list[dict[str, Any]]:
    topics: dict[str, list[Any]] = {}
    for tp in partitions:
        topics.setdefault(tp.topic, []).append(entry(tp))
    return [{"name": name, key: entries} for name, entries in topics.items()]


def _partition_entries(body: Mapping[str, Any]) -> list[tuple[TopicPartition, dict[str, Any]]]:
    return [
        (TopicPartition(str(topic["name"]), int(entry["partition_index"])), entry)
        for topic in body.get("topics") or ()
        for entry in topic.get("partitions") or ()
    ]


def _all_partition_codes(body: Mapping[str, Any]) -> set[int]:
    return {int(entry["error_code"]) for _, entry in _partition_entries(body)}


def _partition_results(
    order: Sequence[TopicPartition], body: Mapping[str, Any]
) -> AdminResult[TopicPartition, None]:
    values: dict[TopicPartition, None] = {}
    errors: dict[TopicPartition, KafkaError] = {}
    for tp, entry in _partition_entries(body):
        code = int(entry["error_code"])
        if code:
            errors[tp] = _error(code, str(tp))
        else:
            values[tp] = None
    for tp in order:
        if tp not in values and tp not in errors:
            errors[tp] = KafkaError(f"{tp}: not in the response")
    return AdminResult(order, values, errors)


def _description(entry: Mapping[str, Any], coordinator: BrokerMetadata) -> ConsumerGroupDescription:
    protocol_type = str(entry["protocol_type"])
    members = tuple(
        MemberDescription(
            member_id=str(member["member_id"]),
            group_instance_id=member.get("group_instance_id"),
            client_id=str(member["client_id"]),
            host=str(member["client_host"]),
            assignment=_assignment(protocol_type, member.get("member_assignment")),
        )
        for member in entry.get("members") or ()
    )
    return ConsumerGroupDescription(
        group_id=str(entry["group_id"]),
        state=str(entry["group_state"]),
        protocol_type=protocol_type,
        protocol=str(entry["protocol_data"]),
        members=members,
        coordinator=coordinator,
    )


def _assignment(protocol_type: str, data: bytes | None) -> tuple[TopicPartition, ...]:
    if protocol_type != CONSUMER_PROTOCOL_TYPE or not data:
        return ()
    try:
        return tuple(decode_assignment(data).partitions)
    except ProtocolError:
        return ()
