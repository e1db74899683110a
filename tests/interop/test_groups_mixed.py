"""Groups of mixed clients: a confluent-kafka member and a kafka-python member (both offering
``range``, the only assignor they share) split a 4-partition topic exclusively and between them
see every record; and a kafkajs 2.2.4 group consumer (its default assigner, protocol
``RoundRobinAssigner``) consumes the topic alone, commits, and the committed offsets read back
with OffsetFetch (confluent-kafka's ``committed``).

The Python members are ``group_member.py`` subprocesses (see ``test_groups``); the kafkajs
consumer is ``js/group_consume.js``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from collections.abc import Iterator

import pytest

from odradek import Broker

from .conftest import INTEROP_DIR, node_env
from .test_groups import (
    GROUP_BROKER_CONFIG,
    PARTITIONS,
    Member,
    committed_offsets,
    create_topic,
    produce,
    wait_until,
)

pytestmark = pytest.mark.interop

JS_DIR = INTEROP_DIR / "js"
NODE_TIMEOUT_S = 30.0


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(config=GROUP_BROKER_CONFIG) as running:
        yield running


def test_confluent_and_kafka_python_members_share_a_topic(broker: Broker) -> None:
    bootstrap = broker.bootstrap_servers
    topic = f"mixed-{uuid.uuid4().hex[:8]}"
    group = f"group-{topic}"
    create_topic(bootstrap, topic)
    produced = set(produce(bootstrap, topic, 40))
    members = [
        Member("confluent-kafka", bootstrap, topic, group),
        Member("kafka-python", bootstrap, topic, group),
    ]
    first, second = members
    try:

        def shared() -> bool:
            a, b = first.assignment(), second.assignment()
            return bool(a and b) and len(a or []) + len(b or []) == PARTITIONS

        wait_until(
            shared,
            "the two members to share the partitions",
            20,
            lambda: f"assignments {first.assignment()} {second.assignment()}",
        )
        a, b = first.assignment() or [], second.assignment() or []
        assert not set(a) & set(b)
        assert sorted(a + b) == list(range(PARTITIONS))

        # Records sent now go to the partitions' owners, and only to them.
        later = set(produce(bootstrap, topic, 40, start=40))
        everything = produced | later
        wait_until(
            lambda: everything <= first.seen() | second.seen(),
            "every record to be seen",
            15,
            lambda: f"missing {sorted(everything - first.seen() - second.seen())}",
        )
        for member, owned in ((first, a), (second, b)):
            assert member.assignment() == owned, "no rebalance was expected"
            mine = {record for record in later if record[0] in owned}
            assert mine <= member.seen()
            assert not (later - mine) & member.seen(), "a record of another member's partition"
        wait_until(
            lambda: (
                committed_offsets(bootstrap, topic, group) == dict.fromkeys(range(PARTITIONS), 20)
            ),
            "the members' commits of every record",
            15,
        )
    finally:
        for member in members:
            member.kill()


def test_kafkajs_group_consumer_commits(broker: Broker) -> None:
    if shutil.which("node") is None or not (JS_DIR / "node_modules" / "kafkajs").is_dir():
        pytest.fail("node or kafkajs is missing: run scripts/bootstrap")
    bootstrap = broker.bootstrap_servers
    topic = f"mixed-js-{uuid.uuid4().hex[:8]}"
    group = f"group-{topic}"
    create_topic(bootstrap, topic)
    produced = set(produce(bootstrap, topic, 40))
    payload = {
        "brokers": bootstrap,
        "topic": topic,
        "groupId": group,
        "expected": len(produced),
        "timeoutMs": 20_000,
    }
    result = subprocess.run(
        ["node", str(JS_DIR / "group_consume.js")],
        input=json.dumps(payload).encode(),
        capture_output=True,
        cwd=JS_DIR,
        env=node_env(),
        timeout=NODE_TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    answer = json.loads(result.stdout)
    assert answer["protocol"] == "RoundRobinAssigner"
    assert answer["assignment"] == list(range(PARTITIONS))
    seen = [tuple(record) for record in answer["records"]]
    assert sorted(seen) == sorted(produced), "every record exactly once"
    expected = dict.fromkeys(range(PARTITIONS), 10)
    assert {int(p): o for p, o in answer["committed"].items()} == expected
    assert committed_offsets(bootstrap, topic, group) == expected
