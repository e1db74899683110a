"""A broker whose controller has not told it anything yet (no UpdateMetadata received) still
names itself in Metadata: an empty broker list made librdkafka's admin client drop the
response and wait for ever (found starting a broker from Kafka's own server.properties)."""

from __future__ import annotations

import time

from confluent_kafka.admin import AdminClient
from tests._blocking_connection import BlockingConnection

from odradek import Broker
from odradek.controller.election import CONTROLLER_PATH, encode_controller
from odradek.controller.zookeeper import ZooKeeperMetadataStore
from odradek.protocol.api_keys import ApiKey

#: A controller that never existed: it holds /controller, so no UpdateMetadata ever comes.
ABSENT_CONTROLLER = 77


def test_metadata_names_the_broker_itself_before_the_first_update(zookeeper_chroot: str) -> None:
    holder = ZooKeeperMetadataStore(zookeeper_chroot)
    try:
        holder.create(
            CONTROLLER_PATH,
            encode_controller(ABSENT_CONTROLLER, int(time.time() * 1000)),
            ephemeral=True,
            make_parents=True,
        )
        with Broker(config={"zookeeper.connect": zookeeper_chroot, "broker.id": 5}) as broker:
            with BlockingConnection(f"127.0.0.1:{broker.port}") as connection:
                body = connection.request(
                    ApiKey.METADATA,
                    12,
                    {
                        "topics": None,
                        "allow_auto_topic_creation": False,
                        "include_topic_authorized_operations": False,
                    },
                )
            assert [(b["node_id"], b["port"]) for b in body["brokers"]] == [(5, broker.port)]
            admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{broker.port}"})
            listed = admin.list_topics(timeout=30)
            assert list(listed.brokers) == [5]
            del admin
    finally:
        holder.close()
