"""Replication's cost of a secured inter-broker listener: acks=all produce throughput on a
3-broker cluster whose brokers talk PLAINTEXT to each other against one whose brokers talk
SASL_SSL (SCRAM-SHA-512, TLS from test certificates), in one run.

Both clusters serve clients on a PLAINTEXT listener and have the same topic (RF 3,
``min.insync.replicas`` 2, ``--partitions`` partitions): what differs is only the BROKER
listener the followers fetch through (and the controller's channel uses), so the ratio is
the cost of TLS on the replication path (SASL is paid once per connection). One ZooKeeper,
two chroots, the clusters one after the other.

    .venv/bin/python bench/inter_broker_security.py [--records 100000] [--size 1024]
        [--partitions 3] [--run-seconds 60] [--rounds 3]

Each cluster takes ``--rounds`` runs after a warm-up and keeps its best (the machine's other
work only ever slows a run down).

The brokers, ZooKeeper and the client share the machine's cores (and the machine may be
shared with other work): read the ratio, not the absolute figures.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from pathlib import Path

from cluster_perf import Throughput, throughput
from odradek.broker.security.credentials import ScramCredentialStore
from odradek.client import AdminClient, NewTopic
from odradek.controller.zookeeper import ZooKeeperMetadataStore
from odradek.protocol.sasl import ScramCredential, ScramMechanism
from odradek.testing.certificates import CertificateFiles, make_certificates
from odradek.testing.cluster import Cluster
from odradek.testing.zookeeper import ZooKeeperEnsemble

USER, PASSWORD = "broker", "broker-secret"
TOPIC = "bench-inter-broker"


def settings(protocol: str, certificates: CertificateFiles) -> dict[str, str]:
    common = {
        "listeners": "PLAINTEXT://127.0.0.1:0,BROKER://127.0.0.1:0",
        "listener.security.protocol.map": f"PLAINTEXT:PLAINTEXT,BROKER:{protocol}",
        "inter.broker.listener.name": "BROKER",
        "replica.fetch.wait.max.ms": "100",
    }
    if protocol == "PLAINTEXT":
        return common
    return {
        **common,
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "listener.name.broker.sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "listener.name.broker.scram-sha-512.sasl.jaas.config": (
            "org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{USER}" password="{PASSWORD}";'
        ),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(certificates.broker_keystore),
        "ssl.key.password": certificates.key_password,
        "ssl.truststore.location": str(certificates.ca),
    }


def plaintext_bootstrap(cluster: Cluster) -> str:
    addresses = []
    for broker_id in cluster.brokers:
        for text in cluster.registration(broker_id)["endpoints"]:
            if text.startswith("PLAINTEXT://"):
                addresses.append(text.removeprefix("PLAINTEXT://"))
    return ",".join(addresses)


def run(
    protocol: str,
    zookeeper: ZooKeeperEnsemble,
    base: Path,
    certificates: CertificateFiles,
    args: argparse.Namespace,
) -> list[Throughput]:
    chroot = f"{zookeeper.connect_string}/bench-{uuid.uuid4().hex[:8]}"
    store = ZooKeeperMetadataStore(chroot)
    try:  # the inter-broker user exists before the brokers start, as Kafka requires
        credential = ScramCredential.from_password(ScramMechanism.SCRAM_SHA_512, PASSWORD)
        ScramCredentialStore(store).alter(USER, {ScramMechanism.SCRAM_SHA_512: credential})
    finally:
        store.close()
    with Cluster(3, chroot, base / protocol, settings=settings(protocol, certificates)) as cluster:
        cluster.wait_until(lambda: cluster.controller_id() is not None, what="a controller")
        bootstrap = plaintext_bootstrap(cluster)
        with AdminClient({"bootstrap.servers": bootstrap}) as admin:
            new = NewTopic(TOPIC, args.partitions, 3, configs={"min.insync.replicas": "2"})
            admin.create_topics([new]).all()
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                partitions = admin.describe_topics([TOPIC])[TOPIC].partitions
                if partitions and all(len(p.isr) == 3 and p.leader is not None for p in partitions):
                    break
                time.sleep(0.1)
        throughput(bootstrap, TOPIC, "all", args.size, 5_000, 30)  # warm-up
        return [
            throughput(bootstrap, TOPIC, "all", args.size, args.records, args.run_seconds)
            for _ in range(args.rounds)
        ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--run-seconds", type=float, default=60.0)
    parser.add_argument("--rounds", type=int, default=3, help="runs per cluster (best kept)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="odradek-ibsec-") as directory:
        base = Path(directory)
        (base / "certificates").mkdir()
        certificates = make_certificates(base / "certificates")
        with ZooKeeperEnsemble(base / "zookeeper", 1) as zookeeper:
            results = {
                protocol: run(protocol, zookeeper, base, certificates, args)
                for protocol in ("PLAINTEXT", "SASL_SSL")
            }
    print(
        f"acks=all, RF 3, min.insync.replicas 2, {args.partitions} partitions, "
        f"{args.records:,} records of {args.size} B (shared machine: read the ratio)"
    )
    best = {}
    for protocol, rounds in results.items():
        for result in rounds:
            print(f"  inter-broker {protocol:<9} {result.describe(args.size)}")
        best[protocol] = max(result.records_per_s for result in rounds)
    baseline = best["PLAINTEXT"]
    ratio = best["SASL_SSL"] / baseline if baseline else float("nan")
    print(f"  best of {args.rounds}: SASL_SSL / PLAINTEXT {ratio:.2f}x")


if __name__ == "__main__":
    main()
