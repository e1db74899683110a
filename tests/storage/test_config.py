"""LogConfig: Kafka's defaults, topic overrides, broker settings with their unit ladders, and
errors that name the setting."""

from __future__ import annotations

import pytest

from odradek.errors import ConfigError
from odradek.storage.config import BROKER_NAMES, TOPIC_NAMES, LogConfig

HOUR_MS = 3_600_000


def test_defaults_are_kafkas() -> None:
    config = LogConfig()
    assert config.segment_bytes == 1024**3
    assert config.segment_ms == 7 * 24 * HOUR_MS
    assert config.retention_ms == 7 * 24 * HOUR_MS
    assert config.retention_bytes == -1
    assert config.index_interval_bytes == 4096
    assert config.segment_index_bytes == 10 * 1024 * 1024
    assert config.file_delete_delay_ms == 60_000
    assert config.max_message_bytes == 1024 * 1024 + 12
    assert config.message_timestamp_type == "CreateTime"
    assert config.deletes
    assert not config.compacts
    assert not config.log_append_time


def test_topic_overrides_from_strings_and_numbers() -> None:
    config = LogConfig().with_overrides(
        {
            "retention.ms": "60000",
            "segment.bytes": 1_048_576,
            "min.cleanable.dirty.ratio": "0.25",
            "message.timestamp.type": "LogAppendTime",
            "cleanup.policy": "compact, delete",
            "index.interval.bytes": " 128 ",
        }
    )
    assert config.retention_ms == 60_000
    assert config.segment_bytes == 1_048_576
    assert config.min_cleanable_dirty_ratio == 0.25
    assert config.log_append_time
    assert config.compacts
    assert config.deletes
    assert config.index_interval_bytes == 128
    assert LogConfig().retention_ms == 7 * 24 * HOUR_MS  # the original is unchanged


def test_topic_configs_round_trip() -> None:
    config = LogConfig(retention_ms=5, cleanup_policy="compact", min_cleanable_dirty_ratio=0.1)
    rendered = config.topic_configs()
    assert set(rendered) == set(TOPIC_NAMES)
    assert rendered["retention.ms"] == "5"
    assert LogConfig().with_overrides(rendered) == config


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"retention.ms": "soon"}, "retention.ms"),
        ({"segment.bytes": 1.5}, "segment.bytes"),
        ({"segment.bytes": "1e6"}, "segment.bytes"),
        ({"segment.bytes": 10}, "segment.bytes"),
        ({"segment.bytes": 2**31}, "segment.bytes"),
        ({"retention.ms": -2}, "retention.ms"),
        ({"flush.messages": 0}, "flush.messages"),
        ({"message.timestamp.type": "WallTime"}, "message.timestamp.type"),
        ({"cleanup.policy": "delete,archive"}, "cleanup.policy"),
        ({"min.cleanable.dirty.ratio": "1.5"}, "min.cleanable.dirty.ratio"),
        ({"min.cleanable.dirty.ratio": "half"}, "min.cleanable.dirty.ratio"),
        ({"min.insync.replicas": 0}, "min.insync.replicas"),
        ({"segment.index.bytes": 8}, "segment.index.bytes"),
        ({"retention.hours": 1}, "retention.hours"),
    ],
)
def test_invalid_overrides_name_the_setting(overrides: dict, named: str) -> None:
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        LogConfig().with_overrides(overrides)


def test_broker_settings_map_to_fields() -> None:
    config = LogConfig.from_broker_settings(
        {
            "log.segment.bytes": "2048",
            "log.index.interval.bytes": 100,
            "log.retention.bytes": "-1",
            "log.segment.delete.delay.ms": 0,
            "message.max.bytes": "5000",
            "log.cleanup.policy": "compact",
            "log.flush.interval.messages": 10,
            "log.flush.interval.ms": 250,
            "broker.id": 7,  # not a log setting: ignored here
        }
    )
    assert config.segment_bytes == 2048
    assert config.index_interval_bytes == 100
    assert config.file_delete_delay_ms == 0
    assert config.max_message_bytes == 5000
    assert config.compacts
    assert not config.deletes
    assert config.flush_messages == 10
    assert config.flush_ms == 250


@pytest.mark.parametrize(
    ("settings", "retention_ms"),
    [
        ({"log.retention.hours": 2}, 2 * HOUR_MS),
        ({"log.retention.minutes": 3, "log.retention.hours": 2}, 3 * 60_000),
        ({"log.retention.ms": 5, "log.retention.minutes": 3, "log.retention.hours": 2}, 5),
        ({"log.retention.ms": "-1", "log.retention.hours": 2}, -1),
        ({"log.retention.hours": -1}, -1),
        ({}, 7 * 24 * HOUR_MS),
    ],
)
def test_broker_retention_ladder(settings: dict, retention_ms: int) -> None:
    assert LogConfig.from_broker_settings(settings).retention_ms == retention_ms


def test_broker_roll_ladder() -> None:
    assert LogConfig.from_broker_settings({"log.roll.hours": 1}).segment_ms == HOUR_MS
    both = {"log.roll.ms": 10, "log.roll.hours": 1}
    assert LogConfig.from_broker_settings(both).segment_ms == 10


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"log.retention.hours": "forever"}, "log.retention.hours"),
        ({"log.segment.bytes": "big"}, "log.segment.bytes"),
        ({"log.roll.ms": 1.5}, "log.roll.ms"),
        ({"log.segment.bytes": 1}, "segment.bytes"),
        ({"log.message.timestamp.type": "Now"}, "message.timestamp.type"),
    ],
)
def test_invalid_broker_settings_name_the_setting(settings: dict, named: str) -> None:
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        LogConfig.from_broker_settings(settings)


def test_broker_names() -> None:
    assert {"log.retention.ms", "log.retention.minutes", "log.retention.hours"} <= BROKER_NAMES
    assert {"log.roll.ms", "log.roll.hours", "log.segment.bytes"} <= BROKER_NAMES
    assert "retention.ms" not in BROKER_NAMES


def test_unclean_leader_election_is_a_topic_config_with_the_broker_value_as_default() -> None:
    assert LogConfig().unclean_leader_election_enable is False
    broker = LogConfig.from_broker_settings({"unclean.leader.election.enable": "true"})
    assert broker.unclean_leader_election_enable is True
    topic = broker.with_overrides({"unclean.leader.election.enable": "FALSE"})
    assert topic.unclean_leader_election_enable is False
    assert topic.topic_configs()["unclean.leader.election.enable"] == "false"
    with pytest.raises(ConfigError, match=r"unclean\.leader\.election\.enable.*true or false"):
        LogConfig().with_overrides({"unclean.leader.election.enable": "1"})
