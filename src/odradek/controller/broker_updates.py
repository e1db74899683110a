"""``BrokerUpdates``: how the controller tells the brokers what it decided — LeaderAndIsr to
a partition's live replicas, UpdateMetadata to every live broker, StopReplica (with delete) to
replicas that go (Kafka's ``ControllerBrokerRequestBatch``).

It owns the ``ControllerChannel`` of a term (opened on election, closed on resigning) and
builds each request's body from the ``ControllerContext``'s held state, never from the store:
what a broker is told is what the controller has written. Every body carries the controller
id and epoch, so a broker refuses a deposed controller's request (STALE_CONTROLLER_EPOCH) and
any partition state whose leader epoch is older than its own.

Why requests rather than ZooKeeper watches on every broker: see ``controller.cluster``.

Each ``send_*`` waits for the brokers' answers (the channel's timeout bounds a slow one); a
broker without an address on ``listener.name`` is skipped, and an error code in an answer is
logged, not raised: the controller's state is already written, and the broker learns it again
with the next request or on restart.

Thread safety: none; used on the ``Controller``'s event thread only.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from odradek._types import TopicPartition
from odradek.controller.channel import BrokerRequest, ControllerChannel
from odradek.controller.context import ControllerContext
from odradek.controller.partition_states import offline_replicas
from odradek.protocol.inter_broker import (
    LEADER_AND_ISR,
    LEADER_AND_ISR_VERSION,
    STOP_REPLICA,
    STOP_REPLICA_VERSION,
    UPDATE_METADATA,
    UPDATE_METADATA_VERSION,
)

logger = logging.getLogger(__name__)

#: Kafka's ``SecurityProtocol`` ids (UpdateMetadata's ``security_protocol``).
SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}

#: The leader Kafka sends in UpdateMetadata for a partition being deleted.
LEADER_DURING_DELETE = -2


class BrokerUpdates:
    """See the module docstring.

    Args:
        context: the held state the requests describe.
        channel_timeout_s: how long a send waits for a broker's answer.
    """

    def __init__(self, context: ControllerContext, *, channel_timeout_s: float = 10.0) -> None:
        self._context = context
        self._channel_timeout_s = channel_timeout_s
        self._channel: ControllerChannel | None = None

    def open(self) -> None:
        """Opens the term's channel (on election)."""
        self._channel = ControllerChannel(
            self._context.broker_id,
            timeout_s=self._channel_timeout_s,
            connect=self._context.settings.connect,
        )

    def close(self) -> None:
        """Closes the term's channel (on resigning); sends do nothing until ``open``."""
        if self._channel is not None:
            self._channel.close()
            self._channel = None

    def send_leader_and_isr(
        self, partitions: Iterable[TopicPartition], live: set[int], *, is_new: bool = False
    ) -> None:
        """LeaderAndIsr to each live replica (in ``live``) of the held ``partitions``, with
        every live broker's address as ``live_leaders``."""
        context = self._context
        fencing = self._fencing()
        per_broker: dict[int, list[dict[str, Any]]] = {}
        for tp in partitions:
            record = context.partitions.get(tp)
            if record is None:
                continue
            state = {
                "topic_name": tp.topic,
                "partition_index": tp.partition,
                "controller_epoch": fencing["controller_epoch"],
                "leader": record.state.leader,
                "leader_epoch": record.state.leader_epoch,
                "isr": list(record.state.isr),
                "zk_version": record.zk_version,
                "replicas": list(record.replicas),
                "is_new": is_new,
            }
            for replica in record.replicas:
                if replica in live:
                    per_broker.setdefault(replica, []).append(state)
        leaders = [
            {"broker_id": broker_id, "host_name": host, "port": port}
            for broker_id, (host, port) in self._addresses()
        ]
        bodies = {
            broker_id: {
                **fencing,
                "ungrouped_partition_states": states,
                "live_leaders": leaders,
            }
            for broker_id, states in per_broker.items()
        }
        self._send(LEADER_AND_ISR, LEADER_AND_ISR_VERSION, bodies)

    def send_update_metadata(
        self, partitions: Iterable[TopicPartition], *, deleting: bool = False
    ) -> None:
        """UpdateMetadata with the held ``partitions`` (leader -2 while ``deleting``) and every
        live broker with all its endpoints (listener names and security protocols), to every
        live broker."""
        context = self._context
        fencing = self._fencing()
        live = set(context.brokers)
        states = []
        for tp in partitions:
            record = context.partitions.get(tp)
            if record is None:
                continue
            states.append(
                {
                    "topic_name": tp.topic,
                    "partition_index": tp.partition,
                    "controller_epoch": fencing["controller_epoch"],
                    "leader": LEADER_DURING_DELETE if deleting else record.state.leader,
                    "leader_epoch": record.state.leader_epoch,
                    "isr": list(record.state.isr),
                    "zk_version": record.zk_version,
                    "replicas": list(record.replicas),
                    "offline_replicas": list(offline_replicas(record.replicas, live)),
                }
            )
        brokers = [
            {
                "id": broker_id,
                "endpoints": self._endpoints(broker_id, host, port),
                "rack": context.brokers[broker_id].rack,
            }
            for broker_id, (host, port) in self._addresses()
        ]
        body = {
            **fencing,
            "ungrouped_partition_states": states,
            "live_brokers": brokers,
        }
        self._send(UPDATE_METADATA, UPDATE_METADATA_VERSION, dict.fromkeys(context.brokers, body))

    def send_stop_replicas(self, stopped: Mapping[TopicPartition, Sequence[int]]) -> None:
        """StopReplica with delete to the given replicas of each partition (those live)."""
        context = self._context
        fencing = self._fencing()
        per_broker: dict[int, list[dict[str, Any]]] = {}
        for tp, replicas in stopped.items():
            for replica in replicas:
                if replica in context.brokers:
                    per_broker.setdefault(replica, []).append(
                        {"topic_name": tp.topic, "partition_index": tp.partition}
                    )
        bodies = {
            broker_id: {
                **fencing,
                "delete_partitions": True,
                "ungrouped_partitions": entries,
            }
            for broker_id, entries in per_broker.items()
        }
        self._send(STOP_REPLICA, STOP_REPLICA_VERSION, bodies)

    def send_stop_replica(self, partitions: Sequence[TopicPartition]) -> None:
        """StopReplica with delete to every live replica of each held partition."""
        held = self._context.partitions
        self.send_stop_replicas({tp: held[tp].replicas for tp in partitions if tp in held})

    def _fencing(self) -> dict[str, int]:
        """What every request carries first: the controller's id and epoch.

        Raises:
            NotControllerError: this broker is not the controller.
        """
        epoch = self._context.require_epoch()
        return {"controller_id": self._context.broker_id, "controller_epoch": epoch.epoch}

    def _addresses(self) -> list[tuple[int, tuple[str, int]]]:
        """Each live broker with an address on ``listener.name``, by id."""
        addresses = []
        for broker_id in sorted(self._context.brokers):
            address = self._address(broker_id)
            if address is not None:
                addresses.append((broker_id, address))
        return addresses

    def _endpoints(self, broker_id: int, host: str, port: int) -> list[dict[str, Any]]:
        """Every endpoint of the broker's registration, as UpdateMetadata lists them (a
        registration without endpoints: its address on ``listener.name``)."""
        registration = self._context.brokers[broker_id]
        endpoints = [
            {
                "port": endpoint.port,
                "host": endpoint.host,
                "listener": endpoint.listener_name,
                "security_protocol": SECURITY_PROTOCOL_IDS.get(endpoint.security_protocol, 0),
            }
            for endpoint in registration.endpoints
        ]
        if not endpoints:
            endpoints.append(
                {
                    "port": port,
                    "host": host,
                    "listener": self._context.settings.listener_name,
                    "security_protocol": 0,
                }
            )
        return endpoints

    def _address(self, broker_id: int) -> tuple[str, int] | None:
        registration = self._context.brokers.get(broker_id)
        if registration is None:
            return None
        endpoint = registration.endpoint(self._context.settings.listener_name)
        if endpoint is not None:
            return endpoint.host, endpoint.port
        if registration.host is None:
            return None
        return registration.host, registration.port

    def _send(
        self, api_key: int, version: int, bodies: Mapping[int, Mapping[str, Any]]
    ) -> dict[int, dict[str, Any] | None]:
        channel = self._channel
        if channel is None or not bodies:
            return {}
        requests = {}
        for broker_id, body in bodies.items():
            address = self._address(broker_id)
            if address is not None:
                requests[broker_id] = BrokerRequest(address[0], address[1], api_key, version, body)
        answers = channel.send(requests)
        for broker_id, answer in answers.items():
            if answer is not None and answer.get("error_code"):
                logger.warning(
                    "controller %d: broker %d answered api %d with error %d",
                    self._context.broker_id,
                    broker_id,
                    api_key,
                    answer["error_code"],
                )
        return answers
