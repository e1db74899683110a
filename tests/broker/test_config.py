"""BrokerConfig: Java properties parsing, Kafka's names and defaults, listeners, the LogConfig
mapping, errors that name the setting, and the DescribeConfigs view."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from odradek.broker.config import (
    SETTING_NAMES,
    BrokerConfig,
    Listener,
    parse_properties,
)
from odradek.broker.kafka_settings import KAFKA_BROKER_SETTINGS
from odradek.broker.security.listeners import SECURITY_SETTING_NAMES
from odradek.errors import ConfigError
from odradek.storage.config import BROKER_NAMES, LogConfig

HOUR_MS = 3_600_000
MAX_LONG = 2**63 - 1

# --- properties ------------------------------------------------------------------------------


def test_properties_separators_comments_and_blanks() -> None:
    text = (
        "# a comment\n"
        "  ! another comment\n"
        "\n"
        "   \t\n"
        "broker.id=1\n"
        "num.partitions : 3\n"
        "log.dirs   /a,/b\n"
        "  zookeeper.connect = localhost:2181  \n"
        "empty.value=\n"
        "bare.key\n"
    )
    assert parse_properties(text) == {
        "broker.id": "1",
        "num.partitions": "3",
        "log.dirs": "/a,/b",
        "zookeeper.connect": "localhost:2181",
        "empty.value": "",
        "bare.key": "",
    }


def test_properties_continuation_lines() -> None:
    text = "listeners=PLAINTEXT://a:1,\\\n        PLAINTEXT2://b:2\nlog.dirs=/x,\\\n\\\n /y\n"
    assert parse_properties(text) == {
        "listeners": "PLAINTEXT://a:1,PLAINTEXT2://b:2",
        "log.dirs": "/x,/y",
    }


def test_properties_even_backslashes_do_not_continue() -> None:
    assert parse_properties("a=x\\\\\nb=y\n") == {"a": "x\\", "b": "y"}


def test_properties_backslash_on_the_last_line_is_dropped() -> None:
    assert parse_properties("a=x\\") == {"a": "x"}


def test_properties_comment_lines_do_not_continue() -> None:
    assert parse_properties("# comment \\\na=1\n") == {"a": "1"}


def test_properties_escapes_and_line_endings() -> None:
    text = "key\\ with\\:odd\\=chars = v\\tx\\u0041\\\\\r\nother=1\rlast=\\ \n"
    assert parse_properties(text) == {
        "key with:odd=chars": "v\txA\\",
        "other": "1",
        "last": " ",  # an escaped blank survives trimming
    }


def test_properties_value_may_contain_separators() -> None:
    assert parse_properties("zookeeper.connect=h1:2181,h2:2181/kafka=x") == {
        "zookeeper.connect": "h1:2181,h2:2181/kafka=x"
    }


def test_properties_later_keys_win() -> None:
    assert parse_properties("a=1\na=2\n") == {"a": "2"}


def test_properties_malformed_unicode_escape_names_the_line() -> None:
    with pytest.raises(ConfigError, match=r"server\.properties line 2"):
        parse_properties("a=1\nb=\\u12\n", source="server.properties")


# --- defaults --------------------------------------------------------------------------------


def test_defaults() -> None:
    config = BrokerConfig.from_properties(None)
    assert config.broker_id == 0
    assert config.listeners == (Listener("PLAINTEXT", "127.0.0.1", 9092),)
    assert config.advertised_listeners == config.listeners
    assert config.log_dirs == ("./data/kafka-logs",)
    assert config.num_partitions == 1
    assert config.default_replication_factor == 1
    assert config.auto_create_topics_enable is True
    assert config.delete_topic_enable is True
    assert config.message_max_bytes == 1048588
    assert config.socket_request_max_bytes == 104857600
    assert config.log_flush_scheduler_interval_ms == 1000
    assert config.log_retention_check_interval_ms == 300000
    assert config.log_flush_offset_checkpoint_interval_ms == 60000
    assert config.zookeeper_connect is None
    assert config.offsets_topic_num_partitions == 50
    assert config.offsets_topic_replication_factor == 3
    assert config.offsets_commit_required_acks == -1
    assert config.offsets_commit_timeout_ms == 5000
    assert config.group_initial_rebalance_delay_ms == 3000
    assert config.log_config == LogConfig()
    assert config.originals == ()


def test_file_then_overrides_win(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text(
        "broker.id=3\nnum.partitions=4\nauto.create.topics.enable=FALSE\nlog.dir=/data\n",
        encoding="utf-8",
    )
    config = BrokerConfig.from_properties(path, {"num.partitions": "8"})
    assert config.broker_id == 3
    assert config.num_partitions == 8
    assert config.auto_create_topics_enable is False
    assert config.log_dirs == ("/data",)


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read broker config file"):
        BrokerConfig.from_properties(tmp_path / "nope.properties")


def test_unknown_setting_in_file_fails(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("log.segmnt.bytes=1024\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"unknown setting 'log\.segmnt\.bytes'"):
        BrokerConfig.from_properties(path)


def test_unknown_override_fails() -> None:
    with pytest.raises(ConfigError, match="unknown setting 'brokerid'"):
        BrokerConfig.from_properties(None, {"brokerid": "1"})


@pytest.mark.parametrize(
    "name",
    [
        "num.io.threads",
        "background.threads",
        "listener.name.internal.ssl.keymanager.algorithm",
        "listener.name.sasl_ssl.scram-sha-256.sasl.login.class",
    ],
)
def test_a_kafka_setting_odradek_does_not_implement_is_accepted_and_named(name: str) -> None:
    config = BrokerConfig.from_mapping({name: "8", "num.partitions": "2"})
    assert config.unimplemented == ((name, "8"),)
    assert config.num_partitions == 2
    [warning] = config.unimplemented_warnings()
    assert f"'{name}'" in warning
    assert "no effect" in warning
    assert config.describe()[name].value == "8"


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("num.io.threads", "x", "invalid value 'x' for num.io.threads"),
        ("log.cleaner.io.buffer.load.factor", "high", "expected a number"),
        ("control.plane.listener.name", "y", None),
    ],
)
def test_an_unimplemented_settings_value_must_still_be_of_its_kafka_type(
    name: str, value: str, message: str | None
) -> None:
    if message is None:  # a free-form type: anything goes
        assert BrokerConfig.from_mapping({name: value}).unimplemented == ((name, value),)
        return
    with pytest.raises(ConfigError, match=re.escape(message)):
        BrokerConfig.from_mapping({name: value})


def test_the_authorizer_settings_are_implemented_and_checked() -> None:
    config = BrokerConfig.from_mapping(
        {
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:admin;User:ops",
            "allow.everyone.if.no.acl.found": "true",
        }
    )
    assert config.unimplemented == ()
    assert dict(config.originals)["super.users"] == "User:admin;User:ops"
    with pytest.raises(ConfigError, match="not an authorizer odradek has"):
        BrokerConfig.from_mapping({"authorizer.class.name": "y"})


@pytest.mark.parametrize(
    "name", ["num.io.thread", "listener.name.internal.no.such.setting", "listener.name..x"]
)
def test_a_name_kafka_does_not_know_still_stops_the_start(name: str) -> None:
    with pytest.raises(ConfigError, match=f"unknown setting '{re.escape(name)}'"):
        BrokerConfig.from_mapping({name: "1"})


def test_node_id_is_the_broker_id_unless_broker_id_is_given() -> None:
    assert BrokerConfig.from_mapping({"node.id": "3"}).broker_id == 3
    assert BrokerConfig.from_mapping({"node.id": "3", "broker.id": "3"}).broker_id == 3
    assert BrokerConfig.from_mapping({}).broker_id == 0
    with pytest.raises(ConfigError, match=r"node\.id 3 and broker\.id 4 must agree"):
        BrokerConfig.from_mapping({"node.id": "3", "broker.id": "4"})


def test_mapping_accepts_ints_and_bools() -> None:
    config = BrokerConfig.from_mapping({"broker.id": 7, "delete.topic.enable": False})
    assert config.broker_id == 7
    assert config.delete_topic_enable is False


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("num.partitions", "abc", "invalid value 'abc' for num.partitions: expected an integer"),
        ("num.partitions", "0", "invalid value '0' for num.partitions: must be at least 1"),
        ("num.partitions", "1.5", "for num.partitions: expected an integer"),
        ("broker.id", "-1", "for broker.id: must be at least 0"),
        ("message.max.bytes", "2147483648", "for message.max.bytes: must be at most 2147483647"),
        ("offsets.topic.replication.factor", "40000", "offsets.topic.replication.factor"),
        ("auto.create.topics.enable", "yes", "for auto.create.topics.enable: expected true or"),
        ("delete.topic.enable", "1", "for delete.topic.enable"),
        ("log.retention.check.interval.ms", "0", "log.retention.check.interval.ms"),
        ("log.dirs", " , ", "for log.dirs"),
        ("log.segment.bytes", "ten", "invalid value 'ten' for log.segment.bytes: expected an"),
        ("log.segment.bytes", "10", "invalid value '10' for log.segment.bytes"),
        ("log.roll.hours", "0", "for log.roll.hours"),
        ("log.cleaner.min.cleanable.ratio", "2", "for log.cleaner.min.cleanable.ratio"),
        ("log.cleaner.min.cleanable.ratio", "half", "log.cleaner.min.cleanable.ratio"),
        ("log.message.timestamp.type", "Now", "expected CreateTime or LogAppendTime"),
        ("log.cleanup.policy", "forever", "for log.cleanup.policy"),
        ("min.insync.replicas", "0", "for min.insync.replicas"),
    ],
)
def test_invalid_values_name_the_setting(name: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        BrokerConfig.from_mapping({name: value})
    assert message in str(caught.value)


def test_booleans_are_case_insensitive() -> None:
    config = BrokerConfig.from_mapping(
        {"auto.create.topics.enable": "False", "delete.topic.enable": " TRUE "}
    )
    assert config.auto_create_topics_enable is False
    assert config.delete_topic_enable is True


# --- listeners -------------------------------------------------------------------------------


def test_listeners_parsing() -> None:
    config = BrokerConfig.from_mapping({"listeners": " plaintext://localhost:0 "})
    assert config.listeners == (Listener("PLAINTEXT", "localhost", 0),)
    assert str(config.listeners[0]) == "PLAINTEXT://localhost:0"


def test_listener_with_ipv6_and_empty_hosts() -> None:
    ipv6 = BrokerConfig.from_mapping({"listeners": "PLAINTEXT://[::1]:9093"})
    assert ipv6.listeners == (Listener("PLAINTEXT", "::1", 9093),)
    assert str(ipv6.listeners[0]) == "PLAINTEXT://[::1]:9093"
    every_interface = BrokerConfig.from_mapping({"listeners": "PLAINTEXT://:9092"})
    assert every_interface.listeners == (Listener("PLAINTEXT", "", 9092),)


def test_advertised_listeners() -> None:
    config = BrokerConfig.from_mapping(
        {
            "listeners": "PLAINTEXT://0.0.0.0:9092",
            "advertised.listeners": "PLAINTEXT://broker1.example.com:19092",
        }
    )
    assert config.listeners == (Listener("PLAINTEXT", "0.0.0.0", 9092),)
    assert config.advertised_listeners == (Listener("PLAINTEXT", "broker1.example.com", 19092),)


def test_empty_advertised_listeners_means_the_listeners() -> None:
    config = BrokerConfig.from_mapping({"advertised.listeners": ""})
    assert config.advertised_listeners == config.listeners


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"listeners": "SSL://localhost:9093"}, "an SSL listener needs ssl.keystore.location"),
        ({"listeners": "INTERNAL://h:1"}, "listener INTERNAL has no security protocol"),
        ({"listeners": "localhost:9092"}, "expected NAME://host:port"),
        ({"listeners": "PLAINTEXT://localhost"}, "expected NAME://host:port"),
        ({"listeners": "PLAINTEXT://localhost:http"}, "for listeners"),
        ({"listeners": "PLAINTEXT://localhost:70000"}, "out of range"),
        ({"listeners": "PLAINTEXT://a:1,PLAINTEXT://b:2"}, "appears twice"),
        ({"listeners": ""}, "for listeners"),
        ({"listeners": "PLAINTEXT://0.0.0.0:9092"}, "non-routable address 0.0.0.0"),
        (
            {"listeners": "PLAINTEXT://:1", "advertised.listeners": "PLAINTEXT://0.0.0.0:1"},
            "invalid value for advertised.listeners",
        ),
        ({"advertised.listeners": "EXTERNAL://h:1"}, "advertised.listeners"),
    ],
)
def test_bad_listeners(settings: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        BrokerConfig.from_mapping(settings)
    assert message in str(caught.value)


# --- log settings ----------------------------------------------------------------------------


def test_log_dirs_beats_log_dir() -> None:
    config = BrokerConfig.from_mapping({"log.dir": "/one", "log.dirs": "/a, /b ,,/c"})
    assert config.log_dirs == ("/a", "/b", "/c")


def test_log_retention_hours() -> None:
    assert BrokerConfig.from_mapping({"log.retention.hours": "1"}).log_config.retention_ms == (
        HOUR_MS
    )


def test_log_units_precedence() -> None:
    config = BrokerConfig.from_mapping(
        {
            "log.roll.hours": "2",
            "log.roll.ms": "5000",
            "log.retention.hours": "1",
            "log.retention.minutes": "3",
        }
    )
    assert config.log_config.segment_ms == 5000
    assert config.log_config.retention_ms == 3 * 60_000


def test_log_settings_reach_log_config() -> None:
    config = BrokerConfig.from_mapping(
        {
            "log.segment.bytes": "1048576",
            "log.retention.bytes": "-1",
            "log.cleanup.policy": "compact,delete",
            "log.message.timestamp.type": "LogAppendTime",
            "log.cleaner.min.cleanable.ratio": "0.25",
            "message.max.bytes": "2000",
            "min.insync.replicas": "2",
        }
    )
    log_config = config.log_config
    assert log_config.segment_bytes == 1048576
    assert log_config.compacts
    assert log_config.deletes
    assert log_config.log_append_time
    assert log_config.min_cleanable_dirty_ratio == 0.25
    assert log_config.max_message_bytes == 2000
    assert config.message_max_bytes == 2000
    assert log_config.min_insync_replicas == 2


def test_flush_ms_defaults_to_never_despite_the_scheduler_default() -> None:
    assert BrokerConfig.from_mapping({}).log_config.flush_ms == MAX_LONG


def test_explicit_scheduler_interval_becomes_flush_ms_as_in_kafka() -> None:
    config = BrokerConfig.from_mapping({"log.flush.scheduler.interval.ms": "2000"})
    assert config.log_flush_scheduler_interval_ms == 2000
    assert config.log_config.flush_ms == 2000
    both = BrokerConfig.from_mapping(
        {"log.flush.scheduler.interval.ms": "2000", "log.flush.interval.ms": "500"}
    )
    assert both.log_config.flush_ms == 500


def test_every_log_config_broker_setting_is_accepted_with_kafkas_default() -> None:
    assert BROKER_NAMES <= SETTING_NAMES
    described = BrokerConfig.from_mapping({}).describe()
    # Only the lower-precedence-unit settings have no default; a setting LogConfig learns
    # later shows up here without one until the broker's table gives it its default.
    unset = {name for name in BROKER_NAMES if described[name].value is None}
    assert unset == {
        "log.roll.ms",
        "log.retention.ms",
        "log.retention.minutes",
        "log.flush.interval.ms",
    }


# --- describe --------------------------------------------------------------------------------


def test_describe_marks_explicit_settings_and_normalises_values() -> None:
    config = BrokerConfig.from_mapping(
        {
            "broker.id": " 2 ",
            "auto.create.topics.enable": "TRUE",
            "listeners": "plaintext://h:1",
            "log.retention.hours": "24",
        }
    )
    entries = config.describe()
    assert set(entries) == SETTING_NAMES | KAFKA_BROKER_SETTINGS.keys()
    implemented = SETTING_NAMES | SECURITY_SETTING_NAMES
    assert {name for name, entry in entries.items() if entry.implemented} == implemented
    assert entries["broker.id"].value == "2"
    assert not entries["broker.id"].is_default
    assert entries["auto.create.topics.enable"].value == "true"
    assert entries["listeners"].value == "PLAINTEXT://h:1"
    assert entries["log.retention.hours"].value == "24"
    assert not entries["log.retention.hours"].is_default
    assert entries["num.partitions"].value == "1"
    assert entries["num.partitions"].is_default
    assert entries["log.retention.ms"].value is None
    assert entries["zookeeper.connect"].value is None
    assert all(entry.read_only for entry in entries.values())
    assert not any(entries[name].sensitive for name in SETTING_NAMES)
    assert entries["ssl.key.password"].sensitive


def test_settings_are_strings_of_every_valued_setting() -> None:
    settings = BrokerConfig.from_mapping({"num.partitions": "6"}).settings()
    assert settings["num.partitions"] == "6"
    assert settings["message.max.bytes"] == "1048588"
    assert settings["log.dir"] == "./data/kafka-logs"
    assert "log.dirs" not in settings
    assert "zookeeper.connect" not in settings


def test_settings_round_trip() -> None:
    config = BrokerConfig.from_mapping(
        {"broker.id": "4", "listeners": "PLAINTEXT://[::1]:0", "log.roll.ms": "1000"}
    )
    explicit = dict(config.originals)
    assert BrokerConfig.from_mapping(explicit) == config


def test_described_defaults_are_the_defaults() -> None:
    defaults = BrokerConfig.from_mapping({})
    settings = defaults.settings()
    # Explicitly set, the scheduler interval also becomes flush.ms (Kafka's fallback).
    del settings["log.flush.scheduler.interval.ms"]
    explicit = BrokerConfig.from_mapping(settings)
    assert explicit.log_config == defaults.log_config == LogConfig()
    assert dataclasses.replace(explicit, originals=()) == defaults


def test_group_coordinator_settings_by_kafka_names() -> None:
    config = BrokerConfig.from_mapping(
        {
            "group.max.size": "5",
            "group.min.session.timeout.ms": "1000",
            "group.max.session.timeout.ms": "60000",
            "offsets.retention.minutes": "10",
            "group.initial.rebalance.delay.ms": "0",
        }
    )
    group = config.group_config
    assert (group.group_max_size, group.group_min_session_timeout_ms) == (5, 1000)
    assert (group.group_max_session_timeout_ms, group.offsets_retention_minutes) == (60000, 10)
    assert group.group_initial_rebalance_delay_ms == 0
    with pytest.raises(ConfigError, match=r"group\.max\.session\.timeout\.ms"):
        BrokerConfig.from_mapping(
            {"group.min.session.timeout.ms": "9000", "group.max.session.timeout.ms": "1000"}
        )


def test_leader_rebalance_settings_have_kafkas_defaults_and_bounds() -> None:
    defaults = BrokerConfig.from_mapping({})
    assert defaults.auto_leader_rebalance_enable is True
    assert defaults.leader_imbalance_check_interval_seconds == 300
    assert defaults.leader_imbalance_per_broker_percentage == 10
    given = BrokerConfig.from_mapping(
        {
            "auto.leader.rebalance.enable": "false",
            "leader.imbalance.check.interval.seconds": "5",
            "leader.imbalance.per.broker.percentage": "0",
        }
    )
    assert given.auto_leader_rebalance_enable is False
    assert given.leader_imbalance_check_interval_seconds == 5
    assert given.leader_imbalance_per_broker_percentage == 0
    for name, value in (
        ("leader.imbalance.per.broker.percentage", "101"),
        ("leader.imbalance.check.interval.seconds", "0"),
        ("auto.leader.rebalance.enable", "yes"),
    ):
        with pytest.raises(ConfigError, match=name):
            BrokerConfig.from_mapping({name: value})


def test_kafka_4_settings_are_known_with_their_types_and_defaults() -> None:
    config = BrokerConfig.from_mapping(
        {"group.consumer.migration.policy": "upgrade", "group.streams.num.standby.replicas": "1"}
    )
    assert dict(config.unimplemented) == {
        "group.consumer.migration.policy": "upgrade",
        "group.streams.num.standby.replicas": "1",
    }
    described = config.describe()
    assert described["group.share.assignors"].kafka_type == "LIST"
    assert described["group.share.assignors"].value == "simple"
    assert described["group.streams.session.timeout.ms"].value == "45000"
    # Kafka 4.0's new defaults (KIP-1030)
    assert described["num.recovery.threads.per.data.dir"].value == "2"
    assert described["log.message.timestamp.after.max.ms"].value == "3600000"
    with pytest.raises(ConfigError, match=r"group\.streams\.session\.timeout\.ms"):
        BrokerConfig.from_mapping({"group.streams.session.timeout.ms": "soon"})


def test_replica_selector_class_takes_kafkas_two_selectors_by_name() -> None:
    base = {"broker.id": "1", "log.dirs": "/x"}
    assert BrokerConfig.from_mapping(base).replica_selector_class == (
        "org.apache.kafka.common.replica.LeaderSelector"
    )
    rack_aware = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
    config = BrokerConfig.from_mapping({**base, "replica.selector.class": rack_aware})
    assert config.replica_selector_class == rack_aware
    with pytest.raises(ConfigError, match=r"replica\.selector\.class"):
        BrokerConfig.from_mapping({**base, "replica.selector.class": "com.example.Nearest"})
