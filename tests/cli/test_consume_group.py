"""``odradek consume`` with ``--group`` (joins the group, commits what it read: a second run
continues after it), ``--include`` (every matching topic), ``--isolation-level``, and
``odradek produce --producer-property``; bad input is one line, exit 2."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from odradek import AdminClient, Broker
from odradek import TopicPartition as OdradekTopicPartition

from .test_produce_consume import Cli, lines_of

PARTITIONS = 3


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    config = {"num.partitions": str(PARTITIONS), "group.initial.rebalance.delay.ms": "0"}
    with Broker(config=config) as started:
        yield started


@pytest.fixture
def cli(broker: Broker, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    return Cli(broker, capsys, monkeypatch)


def committed(broker: Broker, group: str, topic: str) -> int:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    try:
        offsets = admin.list_group_offsets(
            group, [OdradekTopicPartition(topic, p) for p in range(PARTITIONS)]
        ).all()
    finally:
        admin.close()
    return sum(o.offset for o in offsets.values() if o is not None)


def test_a_group_commits_and_the_next_run_continues(cli: Cli, broker: Broker) -> None:
    topic = cli.new_topic()
    assert cli.produce(topic, stdin=lines_of(*(f"r{i}" for i in range(10)))).status == 0
    first = cli.consume(topic, "--group", "readers", "--from-beginning", "--max-messages", "6")
    assert first.status == 0, first.err
    assert len(first.lines) == 6
    assert committed(broker, "readers", topic) == 6
    rest = cli.consume(  # a deadline: the idle timer also covers the join on a loaded machine
        topic, "--group", "readers", "--max-messages", "4", "--timeout-ms", "60000"
    )
    assert rest.status == 0, rest.err
    assert sorted(first.lines + rest.lines) == sorted(f"r{i}" for i in range(10))
    assert rest.err.splitlines()[-1] == "Processed a total of 4 messages"
    assert committed(broker, "readers", topic) == 10


def test_include_reads_every_matching_topic(cli: Cli) -> None:
    a, b, other = cli.new_topic(), cli.new_topic(), cli.new_topic()
    for topic in (a, b, other):
        assert cli.produce(topic, stdin=lines_of(f"from-{topic}")).status == 0
    pattern = f"({a}|{b})"
    run = cli(
        "consume",
        "--bootstrap-server",
        cli.bootstrap,
        "--include",
        pattern,
        "--from-beginning",
        "--max-messages",
        "2",
        "--timeout-ms",
        "60000",  # a deadline: an idle second let a loaded machine exit before the first fetch
    )
    assert run.status == 0, run.err
    assert sorted(run.lines) == sorted([f"from-{a}", f"from-{b}"])
    grouped = cli(
        "consume",
        "--bootstrap-server",
        cli.bootstrap,
        "--include",
        pattern,
        "--group",
        "pattern-readers",
        "--from-beginning",
        "--max-messages",
        "2",
    )
    assert grouped.status == 0, grouped.err
    assert sorted(grouped.lines) == sorted([f"from-{a}", f"from-{b}"])
    nothing = cli(
        "consume",
        "--bootstrap-server",
        cli.bootstrap,
        "--include",
        "no-such-topic-.*",
        "--timeout-ms",
        "100",
    )
    assert nothing.status == 1
    assert "no topic matches 'no-such-topic-.*'" in nothing.error_line()


def test_isolation_level_and_producer_property(cli: Cli) -> None:
    topic = cli.new_topic(partitions=1)
    sent = cli.produce(topic, "--producer-property", "linger.ms=0", stdin=lines_of("x", "y"))
    assert sent.status == 0, sent.err
    run = cli.consume(
        topic,
        "--isolation-level",
        "read_committed",
        "--from-beginning",
        "--max-messages",
        "2",
        "--timeout-ms",
        "60000",
    )
    assert run.status == 0, run.err
    assert run.lines == ["x", "y"]


@pytest.mark.parametrize(
    "args",
    [
        ["consume"],
        ["consume", "--topic", "t", "--include", "t.*"],
        ["consume", "--include", "("],
        ["consume", "--include", "t.*", "--partition", "0"],
        ["consume", "--topic", "t", "--group", "g", "--partition", "0"],
        ["consume", "--topic", "t", "--group", "g", "--offset", "3"],
        ["consume", "--topic", "t", "--isolation-level", "read_dirty"],
        ["consume", "--topic", "t", "--consumer-property", "group.id=x"],
        ["produce", "--topic", "t", "--producer-property", "linger.ms"],
        ["produce", "--topic", "t", "--producer-property", "acks=2"],
        ["produce", "--topic", "t", "--producer-property", "no.such.setting=1"],
    ],
)
def test_usage_mistakes_exit_2(cli: Cli, args: list[str]) -> None:
    run = cli(args[0], "--bootstrap-server", cli.bootstrap, *args[1:])
    assert run.status == 2
    assert run.error_line().startswith("odradek: ")
