"""A cluster whose brokers talk to each other over SASL_SSL (issue 16's last acceptance item):
three ``odradek serve`` brokers on a real ZooKeeper with the listeners PLAINTEXT and SSL for
clients and BROKER (SASL_SSL, SCRAM-SHA-512, the ``broker`` user stored in ZooKeeper before
the brokers start, as Kafka requires) between them.

- every endpoint is registered under ``/brokers/ids`` with its listener name and protocol;
- a topic with 3 replicas and min.insync.replicas=2 takes acks=all records from
  confluent-kafka and every replica holds them (the followers fetched over SASL_SSL, the
  controller's requests went over it too: without them no partition would have a leader);
- Metadata through the SSL listener lists the brokers' SSL endpoints, through PLAINTEXT
  their PLAINTEXT ones;
- with ACLs on, the brokers are their inter-broker principal (``User:broker``): a DENY of
  ClusterAction to ``User:ANONYMOUS`` (what a PLAINTEXT inter-broker connection would be)
  leaves replication working because ``super.users`` names ``User:broker``;
- a broker given a wrong inter-broker password cannot fetch, stays out of the ISR, and says
  so in one log line.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from odradek.broker.auth.acl_store import AclStore
from odradek.broker.auth.acls import (
    CLUSTER_NAME,
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourcePattern,
    ResourceType,
)
from odradek.broker.auth.authorizer import AclAuthorizer, AuthorizerConfig
from odradek.broker.security.credentials import ScramCredentialStore
from odradek.client import AdminClient as OdradekAdmin
from odradek.client import NewTopic
from odradek.controller.zookeeper import ZooKeeperMetadataStore
from odradek.protocol.sasl import ScramCredential, ScramMechanism
from odradek.testing.certificates import CertificateFiles, make_certificates
from odradek.testing.cluster import Cluster

from .test_replication_acceptance import SETTINGS, _batches, _state, _wait

pytestmark = pytest.mark.cluster

BROKER_USER, BROKER_PASSWORD = "broker", "broker-secret"
LISTENERS = ("PLAINTEXT", "SSL", "BROKER")


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> CertificateFiles:
    return make_certificates(tmp_path_factory.mktemp("certificates"))


def _jaas(password: str) -> str:
    return (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{BROKER_USER}" password="{password}";'
    )


def _settings(certificates: CertificateFiles) -> dict[str, str]:
    return {
        **SETTINGS,
        "listeners": ",".join(f"{name}://127.0.0.1:0" for name in LISTENERS),
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,BROKER:SASL_SSL",
        "inter.broker.listener.name": "BROKER",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "listener.name.broker.sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "listener.name.broker.scram-sha-512.sasl.jaas.config": _jaas(BROKER_PASSWORD),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(certificates.broker_keystore),
        "ssl.key.password": certificates.key_password,
        "ssl.truststore.location": str(certificates.ca),
        "offsets.topic.replication.factor": "3",
    }


def _add_broker_user(zookeeper_chroot: str) -> None:
    """The inter-broker user's SCRAM credential, written before any broker starts."""
    store = ZooKeeperMetadataStore(zookeeper_chroot)
    try:
        credential = ScramCredential.from_password(ScramMechanism.SCRAM_SHA_512, BROKER_PASSWORD)
        ScramCredentialStore(store).alter(BROKER_USER, {ScramMechanism.SCRAM_SHA_512: credential})
    finally:
        store.close()


def _endpoints(cluster: Cluster, broker_id: int) -> dict[str, tuple[str, int]]:
    """The broker's registered endpoints, by listener name."""
    endpoints = {}
    for text in cluster.registration(broker_id)["endpoints"]:
        name, _, address = text.partition("://")
        host, _, port = address.rpartition(":")
        endpoints[name] = (host, int(port))
    return endpoints


def _bootstrap(cluster: Cluster, listener: str) -> str:
    return ",".join(
        "{}:{}".format(*_endpoints(cluster, broker_id)[listener]) for broker_id in cluster.brokers
    )


def _ssl_client(certificates: CertificateFiles) -> dict[str, str]:
    return {"security.protocol": "SSL", "ssl.ca.location": str(certificates.ca)}


def _create(bootstrap: str, topic: str, replicas: list[int], cluster: Cluster) -> None:
    new = NewTopic(
        topic,
        -1,
        -1,
        configs={"min.insync.replicas": "2"},
        replica_assignment={0: replicas},
    )
    with OdradekAdmin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([new]).all()
    _wait(lambda: _has_state(cluster, topic), f"{topic}'s partition state")


def _has_state(cluster: Cluster, topic: str) -> bool:
    try:
        _state(cluster, topic)
    except Exception:
        return False
    return True


def _produce(bootstrap: str, topic: str, count: int) -> list[object]:
    """Produces ``count`` records with acks=all; the delivery errors (None: acknowledged)."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": False,
            "linger.ms": 5,
            "message.timeout.ms": 60_000,
        }
    )
    results: list[object] = []
    for index in range(count):
        producer.produce(
            topic, f"record-{index}".encode(), on_delivery=lambda e, _m: results.append(e)
        )
    producer.flush(90)
    return results


@pytest.fixture
def cluster(
    zookeeper_chroot: str, tmp_path: Path, certificates: CertificateFiles
) -> Iterator[Cluster]:
    _add_broker_user(zookeeper_chroot)
    with Cluster(3, zookeeper_chroot, tmp_path, settings=_settings(certificates)) as started:
        started.wait_until(lambda: started.controller_id() is not None, what="a controller")
        yield started


def test_every_listener_is_registered(cluster: Cluster) -> None:
    for broker_id in cluster.brokers:
        registration = cluster.registration(broker_id)
        assert registration["listener_security_protocol_map"] == {
            "PLAINTEXT": "PLAINTEXT",
            "SSL": "SSL",
            "BROKER": "SASL_SSL",
        }
        endpoints = _endpoints(cluster, broker_id)
        assert sorted(endpoints) == sorted(LISTENERS)
        assert len({port for _, port in endpoints.values()}) == 3
        # The broker says it serves on its inter-broker listener.
        assert endpoints["BROKER"][1] == cluster.brokers[broker_id].port


def test_acks_all_records_reach_every_replica_over_sasl_ssl(cluster: Cluster) -> None:
    plaintext = _bootstrap(cluster, "PLAINTEXT")
    _create(plaintext, "secured", [0, 1, 2], cluster)
    errors = _produce(plaintext, "secured", 200)
    assert errors == [None] * 200
    _wait(
        lambda: all(
            sum(_count(batch) for batch in _batches(cluster, b, "secured", 0)) == 200
            for b in cluster.brokers
        ),
        "every replica holds the 200 records",
    )
    replicas = [_batches(cluster, b, "secured", 0) for b in cluster.brokers]
    assert replicas[0] == replicas[1] == replicas[2]
    _wait(lambda: sorted(_state(cluster, "secured")["isr"]) == [0, 1, 2], "a full ISR")


def test_metadata_lists_the_endpoints_of_the_listener_asked(
    cluster: Cluster, certificates: CertificateFiles
) -> None:
    expected = {
        listener: {b: _endpoints(cluster, b)[listener][1] for b in cluster.brokers}
        for listener in ("PLAINTEXT", "SSL")
    }
    ssl_admin = AdminClient(
        {"bootstrap.servers": _bootstrap(cluster, "SSL"), **_ssl_client(certificates)}
    )
    plain_admin = AdminClient({"bootstrap.servers": _bootstrap(cluster, "PLAINTEXT")})
    for listener, admin in (("SSL", ssl_admin), ("PLAINTEXT", plain_admin)):

        def listed(admin: AdminClient = admin, listener: str = listener) -> bool:
            brokers = admin.list_topics(timeout=20).brokers
            return {b: meta.port for b, meta in brokers.items()} == expected[listener]

        _wait(listed, f"Metadata through {listener} listing its endpoints")


def test_a_group_consumes_through_the_ssl_listener(
    cluster: Cluster, certificates: CertificateFiles
) -> None:
    """FindCoordinator through SSL names the coordinator's SSL endpoint (a PLAINTEXT one
    would fail the consumer's TLS handshake), and fetches and commits go there."""
    plaintext = _bootstrap(cluster, "PLAINTEXT")
    _create(plaintext, "read-over-tls", [2, 0, 1], cluster)
    assert _produce(plaintext, "read-over-tls", 30) == [None] * 30
    consumer = Consumer(
        {
            "bootstrap.servers": _bootstrap(cluster, "SSL"),
            **_ssl_client(certificates),
            "group.id": "tls-readers",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe(["read-over-tls"])
        values: list[bytes] = []
        deadline = time.monotonic() + 90
        while len(values) < 30:
            assert time.monotonic() < deadline, f"read {len(values)} of 30"
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
        assert values == [f"record-{index}".encode() for index in range(30)]
        committed = consumer.commit(asynchronous=False)
        assert committed is not None
        assert [tp.offset for tp in committed] == [30]
    finally:
        consumer.close()


ACL_SETTINGS = {
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
    "super.users": f"User:{BROKER_USER}",
}


def _deny_anonymous_cluster_action(zookeeper_chroot: str) -> None:
    """Cluster ACLs before the brokers start: once the cluster resource has one, a principal
    that is not a super user may not use the inter-broker APIs (allow.everyone.if.no.acl.found
    no longer applies to it)."""
    store = ZooKeeperMetadataStore(zookeeper_chroot)
    try:
        acls = AclStore(store, AclAuthorizer(AuthorizerConfig.from_settings(ACL_SETTINGS)))
        acls.start()  # the top-level paths
        entry = AccessControlEntry(
            "User:ANONYMOUS", "*", AclOperation.CLUSTER_ACTION, AclPermissionType.DENY
        )
        pattern = ResourcePattern(ResourceType.CLUSTER, CLUSTER_NAME)
        assert acls.create([AclBinding(pattern, entry)]) == [None]
    finally:
        store.close()


def test_with_acls_the_brokers_are_their_inter_broker_principal_and_super_users(
    zookeeper_chroot: str, tmp_path: Path, certificates: CertificateFiles
) -> None:
    _add_broker_user(zookeeper_chroot)
    _deny_anonymous_cluster_action(zookeeper_chroot)
    settings = {**_settings(certificates), **ACL_SETTINGS}
    with Cluster(3, zookeeper_chroot, tmp_path, settings=settings) as cluster:
        cluster.wait_until(lambda: cluster.controller_id() is not None, what="a controller")
        plaintext = _bootstrap(cluster, "PLAINTEXT")
        _create(plaintext, "audited", [1, 2, 0], cluster)
        assert _produce(plaintext, "audited", 50) == [None] * 50
        _wait(
            lambda: all(
                sum(_count(batch) for batch in _batches(cluster, b, "audited", 0)) == 50
                for b in cluster.brokers
            ),
            "every replica holds the 50 records",
        )
        # A follower slowed past replica.lag.time.max.ms leaves the ISR and rejoins later.
        _wait(lambda: sorted(_state(cluster, "audited")["isr"]) == [0, 1, 2], "the full ISR")


def test_a_broker_with_a_wrong_password_stays_out_of_the_isr(
    zookeeper_chroot: str, tmp_path: Path, certificates: CertificateFiles
) -> None:
    _add_broker_user(zookeeper_chroot)
    settings = _settings(certificates)
    # Brokers 0 and 1 first, so the controller is one of them; then broker 2, whose own
    # login as the inter-broker user is refused (the others' logins to it are accepted).
    with Cluster(2, zookeeper_chroot, tmp_path, settings=settings) as good:
        good.wait_until(lambda: good.controller_id() is not None, what="a controller")
        wrong = {
            **settings,
            "listener.name.broker.scram-sha-512.sasl.jaas.config": _jaas("not-the-password"),
        }
        with Cluster(1, zookeeper_chroot, tmp_path, settings=wrong, broker_ids=[2]) as bad:
            plaintext = ",".join("{}:{}".format(*_endpoints(good, b)["PLAINTEXT"]) for b in (0, 1))
            _create(plaintext, "guarded", [0, 1, 2], good)
            _wait(
                lambda: sorted(_state(good, "guarded")["isr"]) == [0, 1],
                "broker 2 out of the ISR",
            )
            assert _produce(plaintext, "guarded", 20) == [None] * 20
            assert 2 not in _state(good, "guarded")["isr"]
            assert _batches(bad, 2, "guarded", 0) == []
            log = bad.brokers[2].stderr_path.read_text()
            refused = [line for line in log.splitlines() if "cannot fetch from broker" in line]
            assert len(refused) == 1, log[-3000:]
            assert "SCRAM-SHA-512 login as 'broker'" in refused[0]
            assert "Traceback" not in log
            fetched = sum(_count(batch) for batch in _batches(good, 1, "guarded", 0))
            assert fetched == 20  # the good follower got everything meanwhile


def _count(batch: bytes) -> int:
    """The record count of a v2 batch (its last header field)."""
    return int.from_bytes(batch[57:61], "big")
