"""``odradek groups`` beyond Kafka's basics: ``describe --rebalances`` (from the coordinator's
HTTP endpoint), ``--all-groups``, ``--output json``, ``delete-offsets``, and ``reset-offsets``
with ``--to-current``, ``--by-duration``, ``--from-file`` and ``--export``; bad input is one line
without a traceback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek import Broker
from odradek._types import TopicPartition
from odradek.cli.groups import parse_duration
from odradek.client.admin import AdminClient
from odradek.client.admin_types import NewTopic

from .conftest import produce
from .test_groups import GROUP, TOPIC, committed, member, odradek, one_line, table

pytestmark = pytest.mark.interop


@pytest.fixture
def broker() -> Iterator[Broker]:
    config = {
        "offsets.topic.num.partitions": "3",
        "group.initial.rebalance.delay.ms": "0",
        "metrics.port": "0",
        "metrics.host": "127.0.0.1",
    }
    with Broker(config=config) as started:
        yield started


@pytest.fixture
def admin(broker: Broker) -> Iterator[AdminClient]:
    client = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    yield client
    client.close()


@pytest.fixture
def seeded(broker: Broker, admin: AdminClient) -> Broker:
    """As ``test_groups``: ``orders`` with 6 and 4 records stamped 2023-11-14."""
    admin.create_topics([NewTopic(TOPIC, 2, 1)]).all()
    produce(broker.bootstrap_servers, TOPIC, [b"a%d" % i for i in range(6)], partition=0)
    produce(broker.bootstrap_servers, TOPIC, [b"b%d" % i for i in range(4)], partition=1)
    return broker


def test_rebalances_all_groups_and_json(
    seeded: Broker, admin: AdminClient, capsys: pytest.CaptureFixture[str]
) -> None:
    broker = seeded
    consumer = member(broker)
    member_id = admin.describe_groups([GROUP])[GROUP].members[0].member_id
    consumer.close()  # leaves: the second rebalance

    status, out, err = odradek(capsys, broker, "describe", "--group", GROUP, "--rebalances")
    assert status == 0, err
    rows = table(out)
    assert rows[0] == [
        "GROUP",
        "STARTED",
        "CAUSE",
        "MEMBER",
        "LAST-HEARTBEAT",
        "GENERATION",
        "#MEMBERS",
        "TOOK-MS",
    ]
    # Joined, maybe rejoined (kafka-python's leader rejoins once it sees the topic), left.
    causes = [row[2] for row in rows[1:]]
    assert causes[0] == "member_joined"
    assert causes[-1] == "member_left"
    assert set(causes[1:-1]) <= {"member_rejoined"}
    assert {row[3] for row in rows[1:]} == {member_id}
    generations = [row[5] for row in rows[1:]]
    assert generations == [f"{n}->{n + 1}" for n in range(len(rows) - 1)]
    assert rows[-1][6] == "0"  # members after the last one
    status, out, err = odradek(
        capsys, broker, "describe", "--all-groups", "--rebalances", "--output", "json"
    )
    assert (status, err) == (0, "")
    [document] = json.loads("\n".join(out))
    assert document["group"] == GROUP
    assert [r["cause"] for r in document["rebalances"]] == causes
    assert document["rebalances"][-1]["description"] == f"member {member_id} left"

    status, out, err = odradek(capsys, broker, "describe", "--all-groups", "--output", "json")
    assert (status, err) == (0, "")
    [offsets] = json.loads("\n".join(out))
    assert offsets["state"] == "Empty"
    assert [(p["partition"], p["current_offset"], p["lag"]) for p in offsets["partitions"]] == [
        (0, 2, 4),
        (1, 1, 3),
    ]
    status, out, _ = odradek(capsys, broker, "list", "--state", "--output", "json")
    assert json.loads("\n".join(out)) == [{"group": GROUP, "state": "Empty"}]
    status, out, _ = odradek(
        capsys, broker, "describe", "--group", GROUP, "--state", "--output", "json"
    )
    assert json.loads("\n".join(out))[0]["coordinator"]["port"] == broker.port


def test_rebalances_need_the_coordinators_endpoint(capsys: pytest.CaptureFixture[str]) -> None:
    config = {"offsets.topic.num.partitions": "1", "group.initial.rebalance.delay.ms": "0"}
    with Broker(config=config) as plain:
        admin = AdminClient({"bootstrap.servers": plain.bootstrap_servers})
        try:
            admin.create_topics([NewTopic("t", 1, 1)]).all()
            admin.alter_group_offsets("quiet", {TopicPartition("t", 0): 0}).all()
        finally:
            admin.close()
        status, out, err = odradek(capsys, plain, "describe", "--group", "quiet", "--rebalances")
    assert (status, out) == (1, [])
    assert "has no metrics endpoint: start it with metrics.port set" in one_line(err)


def test_reset_to_current_by_duration_export_and_from_file(
    seeded: Broker, admin: AdminClient, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    broker = seeded
    member(broker).close()  # commits 2 and 1, then leaves
    status, out, err = odradek(
        capsys,
        broker,
        "reset-offsets",
        "--group",
        GROUP,
        "--all-topics",
        "--to-current",
        "--export",
    )
    assert (status, err) == (0, "")
    assert out == [f"{TOPIC},0,2", f"{TOPIC},1,1"]
    backup = tmp_path / "offsets.csv"
    backup.write_text("\n".join(out) + "\n")

    # The records are stamped 2023-11-14: a day back from now is past all of them.
    status, out, _ = odradek(
        capsys,
        broker,
        "reset-offsets",
        "--group",
        GROUP,
        "--all-topics",
        "--by-duration",
        "P1D",
        "--execute",
    )
    assert status == 0
    assert committed(admin) == {0: 6, 1: 4}
    status, out, _ = odradek(
        capsys,
        broker,
        "reset-offsets",
        "--group",
        GROUP,
        "--all-topics",
        "--by-duration",
        "P10000D",
        "--execute",
    )
    assert committed(admin) == {0: 0, 1: 0}

    status, out, err = odradek(
        capsys, broker, "reset-offsets", "--group", GROUP, "--from-file", str(backup), "--execute"
    )
    assert (status, err) == (0, "")
    assert table(out)[1:] == [[GROUP, TOPIC, "0", "2"], [GROUP, TOPIC, "1", "1"]]
    assert committed(admin) == {0: 2, 1: 1}


def test_delete_offsets_and_delete_all_groups(
    seeded: Broker, admin: AdminClient, capsys: pytest.CaptureFixture[str]
) -> None:
    broker = seeded
    member(broker).close()
    status, out, err = odradek(
        capsys, broker, "delete-offsets", "--group", GROUP, "--topic", f"{TOPIC}:1"
    )
    assert (status, err) == (0, "")
    assert table(out) == [["TOPIC", "PARTITION", "STATUS"], [TOPIC, "1", "Successful"]]
    assert committed(admin) == {0: 2, 1: None}
    status, out, err = odradek(capsys, broker, "delete", "--all-groups")
    assert (status, err) == (0, "")
    assert out == [f"Deletion of requested consumer groups ('{GROUP}') was successful."]
    assert odradek(capsys, broker, "delete", "--all-groups") == (
        0,
        ["There are no consumer groups to delete."],
        "",
    )


@pytest.mark.parametrize(
    "args",
    [
        ["describe", "--group", GROUP, "--all-groups"],
        ["describe", "--group", GROUP, "--rebalances", "--members"],
        ["describe", "--group", GROUP, "--output", "yaml"],
        ["delete"],
        ["delete-offsets", "--group", GROUP],
        ["reset-offsets", "--group", GROUP, "--all-topics", "--by-duration", "1 day"],
        ["reset-offsets", "--group", GROUP, "--all-topics", "--to-current", "--to-latest"],
        ["reset-offsets", "--group", GROUP, "--from-file", "/nonexistent.csv"],
        ["reset-offsets", "--group", GROUP, "--all-topics", "--from-file", "/dev/null"],
    ],
)
def test_mistakes_are_one_line_exit_2(
    broker: Broker, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    status, out, err = odradek(capsys, broker, *args)
    assert (status, out) == (2, [])
    assert one_line(err).startswith("odradek: ")


def test_a_bad_plan_file_names_its_line(
    broker: Broker, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    plan = tmp_path / "plan.csv"
    plan.write_text(f"{TOPIC},0,5\n{TOPIC},x,1\n")
    status, out, err = odradek(
        capsys, broker, "reset-offsets", "--group", GROUP, "--from-file", str(plan)
    )
    assert (status, out) == (2, [])
    assert "line 2: expected topic,partition,offset" in one_line(err)


def test_parse_duration() -> None:
    assert parse_duration("P1DT2H30M") == (86_400 + 2 * 3_600 + 30 * 60) * 1000
    assert parse_duration("PT0.5S") == 500
    for bad in ("P", "PT", "1D", "P1H", "P1DT", "PT1X"):
        with pytest.raises(Exception, match="ISO-8601 duration"):
            parse_duration(bad)
