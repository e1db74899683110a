"""``odradek groups`` end to end against an embedded broker, with a real group made by a
kafka-python consumer: list, describe (members, lag = produced - committed), reset-offsets (a
dry run changes nothing, --execute does, refused while the group is active), delete
(NON_EMPTY_GROUP while active); CLI mistakes are one line without a traceback (exit 2)."""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator

import pytest

from odradek import Broker
from odradek._types import TopicPartition
from odradek.cli.groups import parse_datetime
from odradek.cli.main import main
from odradek.client.admin import AdminClient
from odradek.client.admin_types import NewTopic

from .conftest import produce

with warnings.catch_warnings():
    # kafka-python loads its protocol schemas with the deprecated importlib.resources.read_text.
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KafkaTopicPartition
    from kafka.structs import OffsetAndMetadata as KafkaOffsetAndMetadata

pytestmark = pytest.mark.interop

TOPIC, GROUP = "orders", "billing"
TIMEOUT_S = 90.0  # a deadline: kafka-python joins slowly on a loaded machine


@pytest.fixture
def broker() -> Iterator[Broker]:
    config = {"offsets.topic.num.partitions": "3", "group.initial.rebalance.delay.ms": "0"}
    with Broker(config=config) as started:
        yield started


@pytest.fixture
def admin(broker: Broker) -> Iterator[AdminClient]:
    client = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    yield client
    client.close()


@pytest.fixture
def seeded(broker: Broker, admin: AdminClient) -> Broker:
    """``orders``: partition 0 holds 6 records, partition 1 holds 4, all stamped
    1_700_000_000_000 (2023-11-14T22:13:20Z)."""
    admin.create_topics([NewTopic(TOPIC, 2, 1)]).all()
    produce(broker.bootstrap_servers, TOPIC, [b"a%d" % i for i in range(6)], partition=0)
    produce(broker.bootstrap_servers, TOPIC, [b"b%d" % i for i in range(4)], partition=1)
    return broker


def member(broker: Broker) -> KafkaConsumer:
    """A kafka-python member of GROUP owning both partitions, with commits 2 and 1."""
    consumer = KafkaConsumer(
        TOPIC,
        bootstrap_servers=broker.bootstrap_servers,
        group_id=GROUP,
        client_id="kp-member",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
    )
    deadline = time.monotonic() + TIMEOUT_S
    while len(consumer.assignment()) < 2:
        assert time.monotonic() < deadline, "the consumer never got both partitions"
        # Not shorter: kafka-python 3.0 can drop the assignment for good when a poll's timer
        # runs out while the completed join is applied (seen on a loaded machine).
        consumer.poll(timeout_ms=2000)
    consumer.commit(
        {
            KafkaTopicPartition(TOPIC, 0): KafkaOffsetAndMetadata(2, None, -1),
            KafkaTopicPartition(TOPIC, 1): KafkaOffsetAndMetadata(1, None, -1),
        }
    )
    return consumer


def odradek(
    capsys: pytest.CaptureFixture[str], broker: Broker, *args: str
) -> tuple[int, list[str], str]:
    status = main(["groups", *args, "--bootstrap-server", broker.bootstrap_servers])
    captured = capsys.readouterr()
    return status, captured.out.splitlines(), captured.err


def table(lines: list[str]) -> list[list[str]]:
    """The rows of a printed table (header first), cells split on runs of spaces."""
    assert lines[0] == ""
    return [line.split() for line in lines[1:]]


def one_line(stderr: str) -> str:
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def committed(admin: AdminClient) -> dict[int, int | None]:
    offsets = admin.list_group_offsets(
        GROUP, [TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)]
    ).all()
    return {tp.partition: None if o is None else o.offset for tp, o in offsets.items()}


def test_list_describe_reset_delete(
    seeded: Broker, admin: AdminClient, capsys: pytest.CaptureFixture[str]
) -> None:
    broker = seeded
    consumer = member(broker)
    try:
        assert odradek(capsys, broker, "list") == (0, [GROUP], "")
        status, out, _ = odradek(capsys, broker, "list", "--state")
        assert (status, table(out)) == (0, [["GROUP", "STATE"], [GROUP, "Stable"]])

        status, out, err = odradek(capsys, broker, "describe", "--group", GROUP)
        assert (status, err) == (0, "")
        rows = table(out)
        assert rows[0] == [
            "GROUP",
            "TOPIC",
            "PARTITION",
            "CURRENT-OFFSET",
            "LOG-END-OFFSET",
            "LAG",
            "CONSUMER-ID",
            "HOST",
            "CLIENT-ID",
        ]
        member_id = admin.describe_groups([GROUP])[GROUP].members[0].member_id
        assert [row[:7] + row[-1:] for row in rows[1:]] == [
            [GROUP, TOPIC, "0", "2", "6", "4", member_id, "kp-member"],
            [GROUP, TOPIC, "1", "1", "4", "3", member_id, "kp-member"],
        ]
        # Columns line up: every cell starts where its header does.
        starts = [out[1].index(name) for name in ("TOPIC", "LAG", "CLIENT-ID")]
        assert all(line[start - 1] == " " for line in out[2:] for start in starts)

        status, out, _ = odradek(capsys, broker, "describe", "--group", GROUP, "--members")
        assert status == 0
        assert table(out)[0] == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
        assert table(out)[1][1] == member_id
        assert table(out)[1][-2:] == ["kp-member", "2"]
        status, out, _ = odradek(
            capsys, broker, "describe", "--group", GROUP, "--members", "--verbose"
        )
        assert table(out)[1][-1] == f"{TOPIC}(0,1)"

        status, out, _ = odradek(capsys, broker, "describe", "--group", GROUP, "--state")
        assert status == 0
        assert " ".join(out[1].split()) == (
            "GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS"
        )
        state_row = out[2].split()
        assert state_row[0] == GROUP
        assert state_row[-2:] == ["Stable", "1"]
        assert f"127.0.0.1:{broker.port}" in out[2]

        # Active: reset refused, delete refused; nothing changed.
        status, out, err = odradek(
            capsys, broker, "reset-offsets", "--group", GROUP, "--all-topics", "--to-earliest"
        )
        assert status == 1
        assert out == []
        assert one_line(err) == (
            f"odradek: Assignments can only be reset if the group '{GROUP}' is inactive, "
            "but the current state is Stable."
        )
        status, _, err = odradek(capsys, broker, "delete", "--group", GROUP)
        assert status == 1
        assert one_line(err).startswith("odradek: NON_EMPTY_GROUP")
        assert committed(admin) == {0: 2, 1: 1}
    finally:
        consumer.close()

    status, out, err = odradek(capsys, broker, "describe", "--group", GROUP)
    assert status == 0
    assert one_line(err) == f"Consumer group '{GROUP}' has no active members."
    assert [row[:9] for row in table(out)[1:]] == [
        [GROUP, TOPIC, "0", "2", "6", "4", "-", "-", "-"],
        [GROUP, TOPIC, "1", "1", "4", "3", "-", "-", "-"],
    ]

    # Dry run (the default): the plan, nothing changed.
    status, out, err = odradek(
        capsys, broker, "reset-offsets", "--group", GROUP, "--all-topics", "--to-latest"
    )
    assert status == 0
    assert "--execute" in one_line(err)
    assert table(out) == [
        ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"],
        [GROUP, TOPIC, "0", "6"],
        [GROUP, TOPIC, "1", "4"],
    ]
    assert committed(admin) == {0: 2, 1: 1}
    status, out, err = odradek(
        capsys,
        broker,
        "reset-offsets",
        "--group",
        GROUP,
        "--topic",
        TOPIC,
        "--shift-by",
        "-5",
        "--dry-run",
    )
    assert (status, err) == (0, "")
    assert table(out)[1:] == [[GROUP, TOPIC, "0", "0"], [GROUP, TOPIC, "1", "0"]]  # clamped

    # --execute applies it.
    def execute(*spec: str) -> dict[int, int | None]:
        status, _, err = odradek(capsys, broker, "reset-offsets", "--group", GROUP, *spec)
        assert (status, err) == (0, "")
        return committed(admin)

    assert execute("--all-topics", "--shift-by", "3", "--execute") == {0: 5, 1: 4}
    assert execute("--topic", f"{TOPIC}:1", "--to-offset", "99", "--execute") == {0: 5, 1: 4}
    assert execute("--topic", f"{TOPIC}:0,1", "--to-earliest", "--execute") == {0: 0, 1: 0}
    assert execute("--topic", TOPIC, "--to-offset", "3", "--execute") == {0: 3, 1: 3}
    assert execute("--all-topics", "--to-datetime", "2023-11-14T22:13:20.000Z", "--execute") == {
        0: 0,
        1: 0,
    }
    assert execute("--all-topics", "--to-datetime", "2100-01-01T00:00:00.000", "--execute") == {
        0: 6,
        1: 4,
    }
    # kafka-python sees the reset.
    reader = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id=GROUP)
    try:
        assert reader.committed(KafkaTopicPartition(TOPIC, 0)) == 6
    finally:
        reader.close()

    status, out, err = odradek(capsys, broker, "delete", "--group", GROUP)
    assert (status, out, err) == (
        0,
        [f"Deletion of requested consumer groups ('{GROUP}') was successful."],
        "",
    )
    assert odradek(capsys, broker, "list") == (0, [], "")
    status, _, err = odradek(capsys, broker, "describe", "--group", GROUP)
    assert status == 1
    assert one_line(err) == f"odradek: Consumer group '{GROUP}' does not exist."
    status, _, err = odradek(capsys, broker, "delete", "--group", GROUP)
    assert status == 1
    assert one_line(err).startswith("odradek: GROUP_ID_NOT_FOUND")


@pytest.mark.parametrize(
    "args",
    [
        ["reset-offsets", "--group", GROUP, "--to-earliest"],  # no scope
        ["reset-offsets", "--group", GROUP, "--all-topics"],  # no spec
        ["reset-offsets", "--group", GROUP, "--all-topics", "--to-earliest", "--to-latest"],
        ["reset-offsets", "--group", GROUP, "--all-topics", "--topic", "t", "--to-latest"],
        [
            "reset-offsets",
            "--group",
            GROUP,
            "--all-topics",
            "--to-latest",
            "--dry-run",
            "--execute",
        ],
        ["reset-offsets", "--group", GROUP, "--topic", "t:x", "--to-latest"],
        ["reset-offsets", "--group", GROUP, "--topic", ":1", "--to-latest"],
        ["reset-offsets", "--group", GROUP, "--all-topics", "--to-datetime", "yesterday"],
        ["reset-offsets", "--group", GROUP, "--all-topics", "--to-datetime", "2024-02-30T00:00:00"],
        ["reset-offsets", "--group", GROUP, "--all-topics", "--shift-by", "two"],
        ["describe"],
        ["describe", "--group", GROUP, "--members", "--state"],
        ["describe", "--group", GROUP, "--verbose"],
        ["delete"],
        ["list", "--bogus"],
    ],
)
def test_cli_mistakes_are_one_line_exit_2(
    broker: Broker, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    status, out, err = odradek(capsys, broker, *args)
    assert (status, out) == (2, [])
    assert one_line(err).startswith("odradek: ")


def test_unreachable_broker_is_one_line_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["groups", "list", "--bootstrap-server", "127.0.0.1:1", "--timeout", "300"])
    assert status == 1
    assert one_line(capsys.readouterr().err).startswith("odradek: ")


def test_parse_datetime_reads_zones_and_local_time() -> None:
    assert parse_datetime("2023-11-14T22:13:20.000Z") == 1_700_000_000_000
    assert parse_datetime("2023-11-14T23:13:20.5+01:00") == 1_700_000_000_500
    assert parse_datetime("2023-11-14T22:13:20") > 0
