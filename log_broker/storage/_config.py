"""Topic configs: one table of every supported name, with Kafka's defaults.

Each row gives the config's type, default, validator and the broker-level config it
falls back to (the synonym DescribeConfigs reports). ``TopicConfig.from_overrides``
validates a topic's override set against the table; ``describe_configs`` lists every
effective value.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._errors import InvalidConfigError

__all__ = [
    "CONFIG_DEFS",
    "ConfigDef",
    "ConfigEntry",
    "ConfigType",
    "TopicConfig",
    "describe_configs",
    "effective_configs",
]

_LONG_MAX = 2**63 - 1
_INT_MAX = 2**31 - 1


class ConfigType(enum.IntEnum):
    """Kafka's DescribeConfigs config_type numbers."""

    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7


@dataclass(frozen=True, slots=True)
class ConfigDef:
    name: str
    type: ConfigType
    default: str  # as Kafka prints it; parsed like any override
    broker_name: str
    doc: str
    check: Callable[[Any], str | None] = field(default=lambda _v: None)


def _at_least(low: float) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        return None if value >= low else f"must be at least {low}"

    return check


def _between(low: float, high: float) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        return None if low <= value <= high else f"must be between {low} and {high}"

    return check


def _one_of(*choices: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        items = value if isinstance(value, tuple) else (value,)
        bad = [item for item in items if item not in choices]
        return f"must be one of {', '.join(choices)}" if bad else None

    return check


_COLUMN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _partition_by(value: Any) -> str | None:
    if value == "" or value == "hour(timestamp)" or _COLUMN.fullmatch(value):
        return None
    return "must be empty, a column name (letters, digits, _) or hour(timestamp)"


_L, _I, _S, _B, _D, _LIST = (
    ConfigType.LONG,
    ConfigType.INT,
    ConfigType.STRING,
    ConfigType.BOOLEAN,
    ConfigType.DOUBLE,
    ConfigType.LIST,
)

CONFIG_DEFS: Mapping[str, ConfigDef] = {
    d.name: d
    for d in (
        ConfigDef(
            "cleanup.policy",
            _LIST,
            "delete",
            "log.cleanup.policy",
            "delete old segments, compact by key, or both",
            _one_of("delete", "compact"),
        ),
        ConfigDef(
            "compression.type",
            _S,
            "producer",
            "compression.type",
            "codec batches are stored with; producer keeps the producer's",
            _one_of("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"),
        ),
        ConfigDef(
            "delete.retention.ms",
            _L,
            "86400000",
            "log.cleaner.delete.retention.ms",
            "how long tombstones survive compaction",
            _at_least(0),
        ),
        ConfigDef(
            "file.delete.delay.ms",
            _L,
            "60000",
            "log.segment.delete.delay.ms",
            "wait before deleting a removed segment's files",
            _at_least(0),
        ),
        ConfigDef(
            "flush.messages",
            _L,
            str(_LONG_MAX),
            "log.flush.interval.messages",
            "fsync after this many messages",
            _at_least(1),
        ),
        ConfigDef(
            "flush.ms",
            _L,
            str(_LONG_MAX),
            "log.flush.interval.ms",
            "fsync after this long",
            _at_least(0),
        ),
        # Topics that are tables: stored and served here for the table writer, a Kafka
        # client that runs beside the broker (headrace.table_topics); the broker itself
        # never writes a table. No broker-wide default: each topic opts in.
        ConfigDef(
            "headrace.table.commit.interval.ms",
            _L,
            "5000",
            "",
            "longest a record waits before the topic's table commits it",
            _at_least(1),
        ),
        ConfigDef(
            "headrace.table.mode",
            _S,
            "disabled",
            "",
            "keep a Delta table of the topic: disabled, key_value (binary key and value"
            " columns) or value_schema_latest (columns of the registry's latest value schema)",
            _one_of("disabled", "key_value", "value_schema_latest"),
        ),
        ConfigDef(
            "headrace.table.partition.by",
            _S,
            "",
            "",
            "the table's partition column: empty for none, a column name, or hour(timestamp)",
            _partition_by,
        ),
        ConfigDef(
            "index.interval.bytes",
            _I,
            "4096",
            "log.index.interval.bytes",
            "bytes between offset index entries",
            _at_least(0),
        ),
        ConfigDef(
            "max.compaction.lag.ms",
            _L,
            str(_LONG_MAX),
            "log.cleaner.max.compaction.lag.ms",
            "longest a record stays uncompacted",
            _at_least(1),
        ),
        ConfigDef(
            "max.message.bytes",
            _I,
            "1048588",
            "message.max.bytes",
            "largest record batch accepted",
            _at_least(0),
        ),
        ConfigDef(
            "message.downconversion.enable",
            _B,
            "true",
            "log.message.downconversion.enable",
            "down-convert for old fetch versions",
        ),
        ConfigDef(
            "message.timestamp.after.max.ms",
            _L,
            str(_LONG_MAX),
            "log.message.timestamp.after.max.ms",
            "how far ahead of the broker a CreateTime may be",
            _at_least(0),
        ),
        ConfigDef(
            "message.timestamp.before.max.ms",
            _L,
            str(_LONG_MAX),
            "log.message.timestamp.before.max.ms",
            "how far behind the broker a CreateTime may be",
            _at_least(0),
        ),
        ConfigDef(
            "message.timestamp.type",
            _S,
            "CreateTime",
            "log.message.timestamp.type",
            "CreateTime keeps the producer's timestamp, LogAppendTime stamps the broker's",
            _one_of("CreateTime", "LogAppendTime"),
        ),
        ConfigDef(
            "min.cleanable.dirty.ratio",
            _D,
            "0.5",
            "log.cleaner.min.cleanable.ratio",
            "dirty share that makes a log eligible for compaction",
            _between(0, 1),
        ),
        ConfigDef(
            "min.compaction.lag.ms",
            _L,
            "0",
            "log.cleaner.min.compaction.lag.ms",
            "shortest a record stays uncompacted",
            _at_least(0),
        ),
        ConfigDef(
            "min.insync.replicas",
            _I,
            "1",
            "min.insync.replicas",
            "replicas that must acknowledge acks=all",
            _at_least(1),
        ),
        ConfigDef("preallocate", _B, "false", "log.preallocate", "preallocate segment files"),
        ConfigDef(
            "retention.bytes",
            _L,
            "-1",
            "log.retention.bytes",
            "largest size before old segments are deleted; -1 unlimited",
            _at_least(-1),
        ),
        ConfigDef(
            "retention.ms",
            _L,
            "604800000",
            "log.retention.ms",
            "age after which segments are deleted; -1 unlimited",
            _at_least(-1),
        ),
        ConfigDef(
            "segment.bytes",
            _I,
            "1073741824",
            "log.segment.bytes",
            "segment file size that triggers a roll",
            _at_least(14),
        ),
        ConfigDef(
            "segment.index.bytes",
            _I,
            "10485760",
            "log.index.size.max.bytes",
            "offset index size that triggers a roll",
            _at_least(4),
        ),
        ConfigDef(
            "segment.jitter.ms",
            _L,
            "0",
            "log.roll.jitter.ms",
            "random jitter subtracted from segment.ms",
            _at_least(0),
        ),
        ConfigDef(
            "segment.ms",
            _L,
            "604800000",
            "log.roll.ms",
            "segment age that triggers a roll",
            _at_least(1),
        ),
        ConfigDef(
            "unclean.leader.election.enable",
            _B,
            "false",
            "unclean.leader.election.enable",
            "allow out-of-sync leaders",
        ),
    )
}


def _parse(definition: ConfigDef, text: str) -> Any:
    kind = definition.type
    if kind in (ConfigType.LONG, ConfigType.INT):
        value = int(text.strip())
        limit = _LONG_MAX if kind is ConfigType.LONG else _INT_MAX
        if not -limit - 1 <= value <= limit:
            raise ValueError("out of range")
        return value
    if kind is ConfigType.DOUBLE:
        return float(text.strip())
    if kind is ConfigType.BOOLEAN:
        lowered = text.strip().lower()
        if lowered not in ("true", "false"):
            raise ValueError("not true or false")
        return lowered == "true"
    if kind is ConfigType.LIST:
        return tuple(item.strip() for item in text.split(",") if item.strip())
    return text.strip()


def _value_of(name: str, text: str) -> Any:
    definition = CONFIG_DEFS.get(name)
    if definition is None:
        raise InvalidConfigError(f"unknown topic config {name!r}")
    try:
        value = _parse(definition, text)
    except ValueError:
        raise InvalidConfigError(
            f"invalid value {text!r} for {name}: expected {definition.type.name.lower()}"
        ) from None
    problem = definition.check(value)
    if problem is not None:
        raise InvalidConfigError(f"invalid value {text!r} for {name}: {problem}")
    return value


def _attr(name: str) -> str:
    return name.replace(".", "_")


@dataclass(frozen=True, slots=True)
class TopicConfig:
    """Effective topic config: typed values, plus the overrides they came from."""

    cleanup_policy: tuple[str, ...] = ("delete",)
    compression_type: str = "producer"
    delete_retention_ms: int = 86400000
    file_delete_delay_ms: int = 60000
    headrace_table_commit_interval_ms: int = 5000
    headrace_table_mode: str = "disabled"
    headrace_table_partition_by: str = ""
    flush_messages: int = _LONG_MAX
    flush_ms: int = _LONG_MAX
    index_interval_bytes: int = 4096
    max_compaction_lag_ms: int = _LONG_MAX
    max_message_bytes: int = 1048588
    message_downconversion_enable: bool = True
    message_timestamp_after_max_ms: int = _LONG_MAX
    message_timestamp_before_max_ms: int = _LONG_MAX
    message_timestamp_type: str = "CreateTime"
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    min_insync_replicas: int = 1
    preallocate: bool = False
    retention_bytes: int = -1
    retention_ms: int = 604800000
    segment_bytes: int = 1073741824
    segment_index_bytes: int = 10485760
    segment_jitter_ms: int = 0
    segment_ms: int = 604800000
    unclean_leader_election_enable: bool = False
    # Derived values already cover what overrides say, so equality is enough; a dict
    # field cannot take part in the hash.
    overrides: Mapping[str, str] = field(default_factory=dict, hash=False)

    @classmethod
    def from_overrides(
        cls, overrides: Mapping[str, str], defaults: Mapping[str, str] | None = None
    ) -> TopicConfig:
        """Validate ``overrides`` (topic level) over ``defaults`` (broker level, by topic
        config name) and build the effective config. Unknown names or bad values raise
        ``InvalidConfigError``; nothing is half applied."""
        values: dict[str, Any] = {}
        for layer in (defaults or {}, overrides):
            for name, text in layer.items():
                values[_attr(name)] = _value_of(name, text)
        return cls(**values, overrides=dict(overrides))

    def value(self, name: str) -> Any:
        """The typed value of the config called ``name`` (Kafka spelling)."""
        if name not in CONFIG_DEFS:
            raise InvalidConfigError(f"unknown topic config {name!r}")
        return getattr(self, _attr(name))

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"


def _render(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One row of DescribeConfigs for a topic."""

    name: str
    value: str
    is_default: bool
    type: ConfigType
    broker_name: str
    doc: str


def describe_configs(config: TopicConfig) -> list[ConfigEntry]:
    """Every supported config with its effective value, sorted by name; ``is_default``
    is false exactly for the names the topic overrides."""
    return [
        ConfigEntry(
            name,
            _render(getattr(config, _attr(name))),
            name not in config.overrides,
            definition.type,
            definition.broker_name,
            definition.doc,
        )
        for name, definition in sorted(CONFIG_DEFS.items())
    ]


def effective_configs(
    overrides: Mapping[str, str], defaults: Mapping[str, str] | None = None
) -> list[tuple[str, str, bool]]:
    """(name, value, is_default) for every supported config of a topic with these
    overrides, sorted by name. Validates like ``TopicConfig.from_overrides``."""
    return [
        (entry.name, entry.value, entry.is_default)
        for entry in describe_configs(TopicConfig.from_overrides(overrides, defaults))
    ]
