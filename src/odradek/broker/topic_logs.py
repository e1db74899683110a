"""The logs of a topic change, made, undone and removed on the topic manager's worker thread.

``TopicManager`` decides and publishes topic changes; this module owns their effect on the
log directories: making a stored plan's logs (stopping where it is when the broker stops, and
undoing logs and store entries when storage fails), and removing a deleted topic's logs before
its metadata (a crash in between leaves a topic with empty logs, never old data). Each log it
makes gets the topic's id in ``partition.metadata`` (KIP-516), as Kafka writes it. Synchronous:
it runs off the event loop.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from odradek._types import TopicPartition
from odradek.broker.ports import TopicPlan
from odradek.controller.topics import ClusterMetadata
from odradek.errors import KafkaError, KafkaStorageError
from odradek.storage.config import LogConfig
from odradek.storage.manager import LogManager
from odradek.storage.partition_metadata import write_partition_metadata

logger = logging.getLogger(__name__)

#: Passes over the logs an undo makes (out of descriptors, the first deletions fail until
#: the ones after them have closed their files).
UNDO_PASSES = 3


class TopicChangeInterruptedError(Exception):
    """The broker is stopping: the work stops where it is (``startup`` finishes it)."""


def describe_change(plan: TopicPlan) -> str:
    return "creation" if plan.new_topic else "growth"


class TopicLogs:
    """Makes and removes topic changes' logs on this broker.

    Args:
        broker_id: this broker (it makes the logs of the partitions it holds a replica of).
        log_manager: the log directories.
        metadata: the store of the topics, for undoing a change.
        stopping: set when the broker stops.
    """

    def __init__(
        self,
        broker_id: int,
        log_manager: LogManager,
        metadata: ClusterMetadata,
        stopping: threading.Event,
    ) -> None:
        self.broker_id = broker_id
        self.log_manager = log_manager
        self.metadata = metadata
        self.stopping = stopping

    def make(self, plan: TopicPlan, log_config: LogConfig) -> None:
        """Makes the logs of a stored plan; undoes the logs and the store on a failure.

        Raises:
            TopicChangeInterruptedError: the broker stops (nothing undone: ``startup``
                finishes the work).
            KafkaError: KAFKA_STORAGE_ERROR for a log that cannot be made (undone).
        """
        topic = plan.topic
        made: list[TopicPartition] = []
        log_manager = self.log_manager
        try:
            topic_id = self.metadata.topic_id(topic)
            for index, replicas in sorted(plan.assignment.items()):
                if self.stopping.is_set():
                    raise TopicChangeInterruptedError
                if self.broker_id in replicas:
                    topic_partition = TopicPartition(topic, index)
                    log = log_manager.get_or_create_log(topic_partition, log_config)
                    made.append(topic_partition)
                    if topic_id is not None:
                        write_partition_metadata(log.directory, topic_id)
        except TopicChangeInterruptedError:
            raise
        except BaseException as error:
            logger.error(
                "%s of topic %s failed after %d of %d logs, undoing it: %s",
                describe_change(plan),
                topic,
                len(made),
                len(plan.assignment),
                error,
            )
            self.undo(plan, made)
            if isinstance(error, KafkaError):
                raise
            raise KafkaStorageError(
                f"cannot create the logs of topic {topic!r}: {error}"
            ) from error

    def undo(self, plan: TopicPlan, made: Sequence[TopicPartition]) -> None:
        log_manager = self.log_manager
        pending = list(made)
        for attempt in range(UNDO_PASSES):
            failed = []
            for topic_partition in pending:
                try:
                    log_manager.delete_log(topic_partition, checkpoint=False)
                except Exception as error:
                    failed.append(topic_partition)
                    if attempt == UNDO_PASSES - 1:
                        logger.error("cannot delete the log of %s: %s", topic_partition, error)
            pending = failed
            if not pending:
                break
        try:
            log_manager.checkpoint_logs()
        except Exception:
            logger.exception("cannot write the checkpoints after undoing topic %s", plan.topic)
        try:
            if plan.new_topic:
                self.metadata.delete_topic(plan.topic)
            else:
                self.metadata.remove_partitions(plan.topic, plan.first_partition)
        except Exception:
            logger.exception("cannot undo the metadata of topic %s", plan.topic)

    def remove(self, topic: str, detached: Sequence[TopicPartition]) -> None:
        """Deletes a detached topic's logs (renamed at once, removed in the background), then
        its metadata: a crash in between leaves a topic with empty logs, never old data."""
        log_manager = self.log_manager
        for topic_partition in detached:
            log_manager.delete_log(topic_partition, checkpoint=False)
        log_manager.checkpoint_logs()  # once, not once per log
        self.metadata.delete_topic(topic)
        logger.info("deleted topic %s (%d partitions)", topic, len(detached))
