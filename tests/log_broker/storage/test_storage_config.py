from __future__ import annotations

from dataclasses import fields

import pytest

from headrace.log_broker.storage import (
    CONFIG_DEFS,
    InvalidConfigError,
    TopicConfig,
    describe_configs,
    effective_configs,
)
from headrace.log_broker.storage._config import _value_of


def test_table_and_dataclass_agree_on_names_and_defaults() -> None:
    attributes = {f.name for f in fields(TopicConfig)} - {"overrides"}
    assert attributes == {name.replace(".", "_") for name in CONFIG_DEFS}
    plain = TopicConfig()
    for name, definition in CONFIG_DEFS.items():
        assert _value_of(name, definition.default) == plain.value(name), name


@pytest.mark.parametrize(
    ("name", "default"),
    [
        ("cleanup.policy", ("delete",)),
        ("retention.ms", 604800000),
        ("retention.bytes", -1),
        ("segment.bytes", 1073741824),
        ("segment.ms", 604800000),
        ("index.interval.bytes", 4096),
        ("max.message.bytes", 1048588),
        ("message.timestamp.type", "CreateTime"),
        ("min.compaction.lag.ms", 0),
        ("delete.retention.ms", 86400000),
        ("min.cleanable.dirty.ratio", 0.5),
        ("compression.type", "producer"),
        ("min.insync.replicas", 1),
        ("unclean.leader.election.enable", False),
        ("segment.index.bytes", 10485760),
        ("file.delete.delay.ms", 60000),
        ("preallocate", False),
        ("message.downconversion.enable", True),
    ],
)
def test_kafka_defaults(name: str, default: object) -> None:
    assert TopicConfig().value(name) == default


def test_overrides_are_parsed_and_kept() -> None:
    config = TopicConfig.from_overrides(
        {
            "retention.ms": "1000",
            "cleanup.policy": "compact, delete",
            "preallocate": "TRUE",
            "min.cleanable.dirty.ratio": "0.25",
        }
    )
    assert config.retention_ms == 1000
    assert config.cleanup_policy == ("compact", "delete") and config.compact and config.delete
    assert config.preallocate is True and config.min_cleanable_dirty_ratio == 0.25
    assert dict(config.overrides)["retention.ms"] == "1000"


def test_broker_defaults_sit_under_topic_overrides() -> None:
    config = TopicConfig.from_overrides(
        {"retention.ms": "5"}, {"retention.ms": "7", "segment.ms": "9"}
    )
    assert (config.retention_ms, config.segment_ms) == (5, 9)
    assert dict(config.overrides) == {"retention.ms": "5"}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"no.such.config": "1"}, "unknown topic config 'no.such.config'"),
        ({"retention.ms": "soon"}, "expected long"),
        ({"retention.ms": "-2"}, "at least -1"),
        ({"segment.bytes": "13"}, "at least 14"),
        ({"segment.bytes": str(2**31)}, "expected int"),
        ({"cleanup.policy": "shred"}, "one of delete, compact"),
        ({"message.timestamp.type": "Now"}, "CreateTime, LogAppendTime"),
        ({"preallocate": "yes"}, "expected boolean"),
        ({"min.cleanable.dirty.ratio": "1.5"}, "between 0 and 1"),
        ({"compression.type": "brotli"}, "one of producer"),
        ({"min.insync.replicas": "0"}, "at least 1"),
    ],
)
def test_bad_overrides_are_refused_clearly(overrides: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigError, match=message.replace(".", r"\.")):
        TopicConfig.from_overrides(overrides)


def test_describe_lists_every_config_and_marks_overrides() -> None:
    entries = describe_configs(TopicConfig.from_overrides({"retention.ms": "42"}))
    assert [e.name for e in entries] == sorted(CONFIG_DEFS)
    by_name = {e.name: e for e in entries}
    assert by_name["retention.ms"].value == "42" and not by_name["retention.ms"].is_default
    assert by_name["segment.ms"].is_default and by_name["segment.ms"].value == "604800000"
    assert by_name["retention.ms"].broker_name == "log.retention.ms"
    assert by_name["preallocate"].value == "false"


def test_effective_configs_tuples() -> None:
    rows = effective_configs({"cleanup.policy": "compact"})
    assert ("cleanup.policy", "compact", False) in rows
    assert ("retention.bytes", "-1", True) in rows
    assert len(rows) == len(CONFIG_DEFS)
