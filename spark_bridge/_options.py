"""The data source's options, named as in Spark's own Kafka source.

Keys are case-insensitive (Spark lower-cases them on the way in). Any other
``kafka.``-prefixed key is handed to the Kafka client unchanged, the way Spark's
source passes ``kafka.*`` through to its consumer, except the five Spark refuses
(they would change what a read returns). Every option of Spark's source that is read
here does what Spark's does; the few it has that this source lacks, and any key
neither knows, fail with an error naming the key rather than being ignored.

Where a read starts (and, in a batch, ends) is chosen as Spark chooses: a global
timestamp first, then timestamps per partition, then offsets (``_timestamps.py``).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from headrace.base import ClientSecurity

from ._errors import OptionError
from ._offsets import LATEST, OffsetSpec, TopicPartition, parse_offset_spec
from ._timestamps import (
    TimestampSpec,
    check_time_order,
    no_match_strategy,
    parse_global_timestamp,
    parse_partition_timestamps,
)

ISOLATION_LEVELS = ("read_committed", "read_uncommitted")
_SECURITY_PREFIXES = ("security.", "sasl.", "ssl.")
# Spark's Kafka source options read here (lower-cased) ...
_SPARK_OPTIONS = {
    "kafka.bootstrap.servers",
    "subscribe",
    "subscribepattern",
    "assign",
    "startingtimestamp",
    "startingoffsetsbytimestamp",
    "startingoffsets",
    "endingtimestamp",
    "endingoffsetsbytimestamp",
    "endingoffsets",
    "startingoffsetsbytimestampstrategy",
    "failondataloss",
    "kafkaconsumer.polltimeoutms",
    "maxoffsetspertrigger",
    "minpartitions",
    "groupidprefix",
    "includeheaders",
}
# ... and this source's own: the value's format, packing, and the isolation level
# without its kafka. prefix. ``path`` is what ``load(path)`` passes.
_OWN_OPTIONS = {
    "maxpartitions",
    "isolation.level",
    "value.format",
    "schema.registry.url",
    "value.subject",
    "path",
}
# Options of Spark's source this one does not have, and why a read would differ.
UNSUPPORTED = {
    "fetchoffset.numretries": "offset requests are retried by the Kafka client",
    "fetchoffset.retryintervalms": "offset requests are retried by the Kafka client",
    "minoffsetspertrigger": "micro-batches are not delayed to gather records",
    "maxtriggerdelay": "micro-batches are not delayed to gather records",
    "maxrecordsperpartition": "use minPartitions to cut large partitions",
}
# kafka.* settings Spark's source refuses, and its reasons.
REFUSED_KAFKA = {
    "auto.offset.reset": "set startingOffsets to earliest or latest instead",
    "key.deserializer": "keys are bytes; deserialize them with DataFrame operations",
    "value.deserializer": "values are bytes; deserialize them with DataFrame operations",
    "enable.auto.commit": "progress is Spark's checkpoint, not a consumer group's",
    "interceptor.classes": "interceptors could change the records read",
}
VALUE_FORMATS = ("binary", "avro", "protobuf", "json-schema")

Position = OffsetSpec | TimestampSpec  # where a read starts or ends, before resolution


@dataclass(frozen=True)
class Subscription:
    """Exactly one of: topic names, a topic regex, or explicit partitions."""

    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assigned: tuple[TopicPartition, ...] = ()


@dataclass(frozen=True)
class SourceOptions:
    bootstrap_servers: str
    subscription: Subscription
    starting: Position
    ending: Position
    max_offsets_per_trigger: int | None = None
    # Spark's rule (``_range_split.py``): a Spark partition per topic-partition, large
    # ones cut when minPartitions asks for more.
    min_partitions: int | None = None
    # This source's own: pack the ranges into this many Spark partitions, each read
    # through one consumer (``_packing.py``).
    max_partitions: int | None = None
    # kafkaConsumer.pollTimeoutMs: how long a task waits on records before failing.
    poll_timeout_ms: int | None = None
    isolation_level: str = "read_committed"
    include_headers: bool = False
    fail_on_data_loss: bool = True
    client_config: dict[str, str] = field(default_factory=dict)
    # value.format avro|protobuf|json-schema: the value's fields as typed columns, by the
    # latest schema of value.subject (default <topic>-value) in the registry.
    value_format: str = "binary"
    schema_registry_url: str | None = None
    value_subject: str | None = None


def librdkafka_config(config: Mapping[str, str]) -> dict[str, str]:
    """Kafka client settings for librdkafka: the Java client's security keys (as Spark
    users write them: ``security.protocol``, ``sasl.jaas.config``,
    ``ssl.truststore.location``) become librdkafka's; every other key passes unchanged."""
    security = {k: v for k, v in config.items() if k.startswith(_SECURITY_PREFIXES)}
    rest = {k: v for k, v in config.items() if k not in security}
    if not security:
        return rest
    try:
        translated = ClientSecurity.from_properties(security).librdkafka_options()
    except ValueError as exc:
        raise OptionError(f"kafka. security options: {exc}") from None
    return {**rest, **translated}


def _bool(options: Mapping[str, str], key: str, default: bool) -> bool:
    raw = options.get(key)
    if raw is None:
        return default
    if raw.strip().lower() in ("true", "false"):
        return raw.strip().lower() == "true"
    raise OptionError(f"{key}: expected true or false, got {raw!r}")


def _positive_int(options: Mapping[str, str], key: str, name: str) -> int | None:
    raw = options.get(key)
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError as exc:
        raise OptionError(f"{name} must be a whole number, got {raw!r}") from exc
    if value <= 0:
        raise OptionError(f"{name} must be positive, got {value}")
    return value


def _subscription(options: Mapping[str, str]) -> Subscription:
    given = [k for k in ("subscribe", "subscribepattern", "assign") if options.get(k)]
    if len(given) != 1:
        raise OptionError(
            f"set exactly one of subscribe, subscribePattern, assign (got {given or 'none'})"
        )
    key = given[0]
    raw = options[key]
    if key == "subscribe":
        topics = tuple(t.strip() for t in raw.split(",") if t.strip())
        if not topics:
            raise OptionError("subscribe: no topic named")
        return Subscription(topics=topics)
    if key == "subscribepattern":
        try:
            re.compile(raw)
        except re.error as exc:
            raise OptionError(f"subscribePattern: {exc}") from exc
        return Subscription(pattern=raw)
    try:
        parsed = json.loads(raw)
        assigned = tuple(
            TopicPartition(str(t), int(p)) for t, parts in parsed.items() for p in parts
        )
    except (ValueError, AttributeError, TypeError) as exc:
        raise OptionError(f'assign: expected JSON like {{"topic": [0, 1]}}, got {raw!r}') from exc
    if not assigned:
        raise OptionError("assign: no partition named")
    return Subscription(assigned=assigned)


def parse_options(raw: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Validate options for a batch (``streaming=False``) or streaming read.

    Defaults follow Spark: a batch read covers earliest..latest, a stream starts at
    latest; an end exists only for batch reads.
    """
    options = {k.lower(): str(v) for k, v in raw.items()}
    _check_known(options)
    bootstrap = options.get("kafka.bootstrap.servers")
    if not bootstrap:
        raise OptionError("option kafka.bootstrap.servers is required")
    if streaming:
        for key in ("endingoffsets", "endingoffsetsbytimestamp", "endingtimestamp"):
            if key in options:
                raise OptionError(f"{_spelling(key)} is for batch reads; a stream has no end")
    on_no_match = no_match_strategy(options.get("startingoffsetsbytimestampstrategy"))
    starting = _position(
        options, "starting", "latest" if streaming else "earliest", on_no_match=on_no_match
    )
    ending = _position(options, "ending", "latest", on_no_match=on_no_match)
    if not streaming:
        _check_batch_bounds(starting, ending)
    # Spark ignores a trigger's limits in a batch read (with a warning): so does this.
    max_per_trigger = (
        _positive_int(options, "maxoffsetspertrigger", "maxOffsetsPerTrigger")
        if streaming
        else None
    )
    min_partitions = _positive_int(options, "minpartitions", "minPartitions")
    max_partitions = _positive_int(options, "maxpartitions", "maxPartitions")
    if min_partitions is not None and max_partitions is not None:
        raise OptionError("set minPartitions (Spark's rule) or maxPartitions (packing), not both")
    isolation = options.get(
        "isolation.level", options.get("kafka.isolation.level", "read_committed")
    ).lower()
    if isolation not in ISOLATION_LEVELS:
        raise OptionError(f"isolation.level must be one of {ISOLATION_LEVELS}")
    value_format, registry, subject = _value_options(options)
    return SourceOptions(
        value_format=value_format,
        schema_registry_url=registry,
        value_subject=subject,
        bootstrap_servers=bootstrap,
        subscription=_subscription(options),
        starting=starting,
        ending=ending,
        max_offsets_per_trigger=max_per_trigger,
        min_partitions=min_partitions,
        max_partitions=max_partitions,
        poll_timeout_ms=_positive_int(options, "kafkaconsumer.polltimeoutms", "pollTimeoutMs"),
        isolation_level=isolation,
        include_headers=_bool(options, "includeheaders", False),
        fail_on_data_loss=_bool(options, "failondataloss", True),
        client_config=_client_config(options),
    )


_SPELLING = {
    "endingoffsets": "endingOffsets",
    "endingoffsetsbytimestamp": "endingOffsetsByTimestamp",
    "endingtimestamp": "endingTimestamp",
    "startingoffsets": "startingOffsets",
    "startingoffsetsbytimestamp": "startingOffsetsByTimestamp",
    "startingtimestamp": "startingTimestamp",
    "fetchoffset.numretries": "fetchOffset.numRetries",
    "fetchoffset.retryintervalms": "fetchOffset.retryIntervalMs",
    "minoffsetspertrigger": "minOffsetsPerTrigger",
    "maxtriggerdelay": "maxTriggerDelay",
    "maxrecordsperpartition": "maxRecordsPerPartition",
}


def _spelling(key: str) -> str:
    """An option's name as Spark's documentation writes it."""
    return _SPELLING.get(key, key)


def _check_known(options: Mapping[str, str]) -> None:
    """Fail on a key this source would otherwise ignore, naming it."""
    for key in sorted(options):
        if key in UNSUPPORTED:
            raise OptionError(
                f"option {_spelling(key)} of Spark's Kafka source is not supported here:"
                f" {UNSUPPORTED[key]}"
            )
        setting = key.removeprefix("kafka.")
        if key.startswith("kafka.") and setting in REFUSED_KAFKA:
            raise OptionError(
                f"Kafka option {setting!r} is not supported (as in Spark's Kafka source):"
                f" {REFUSED_KAFKA[setting]}"
            )
        if not key.startswith("kafka.") and key not in _SPARK_OPTIONS | _OWN_OPTIONS:
            raise OptionError(
                f"unknown option {key!r} (Kafka client settings take a kafka. prefix)"
            )


def _position(options: Mapping[str, str], side: str, default: str, *, on_no_match: str) -> Position:
    """Spark's order of preference: ``<side>Timestamp``, then
    ``<side>OffsetsByTimestamp``, then ``<side>Offsets``; the others are then unused."""
    everywhere = options.get(f"{side}timestamp")
    if everywhere is not None:
        return parse_global_timestamp(
            everywhere, option=f"{side}Timestamp", on_no_match=on_no_match
        )
    per_partition = options.get(f"{side}offsetsbytimestamp")
    if per_partition is not None:
        return parse_partition_timestamps(
            per_partition, option=f"{side}OffsetsByTimestamp", on_no_match=on_no_match
        )
    return parse_offset_spec(
        options.get(f"{side}offsets", default),
        option=f"{side}Offsets",
        allow_earliest=side == "starting",
    )


def _check_batch_bounds(starting: Position, ending: Position) -> None:
    """Spark's checks of a batch read's two ends."""
    if starting == "latest":
        raise OptionError("startingOffsets=latest makes an empty batch read; use a stream")
    if isinstance(starting, dict):
        for tp, offset in sorted(starting.items()):
            if offset == LATEST:
                raise OptionError(
                    f"startingOffsets for {tp.topic}/{tp.partition} can't be latest (-1)"
                    " for batch reads"
                )
    if isinstance(starting, dict) and isinstance(ending, dict):
        if set(starting) != set(ending):
            raise OptionError(
                "startingOffsets and endingOffsets name different partitions:"
                f" {sorted(starting)} and {sorted(ending)}"
            )
        for tp, begin in sorted(starting.items()):
            if begin > ending[tp] >= 0 and begin >= 0:
                raise OptionError(
                    f"startingOffsets {begin} of {tp.topic}/{tp.partition} is after its"
                    f" endingOffsets {ending[tp]}"
                )
    if isinstance(starting, TimestampSpec) and isinstance(ending, TimestampSpec):
        check_time_order(starting, ending)


def _client_config(options: Mapping[str, str]) -> dict[str, str]:
    """The kafka.* settings for the client; groupIdPrefix names the (never joined) group
    as Spark names its own, unless kafka.group.id does."""
    config = librdkafka_config(
        {
            k.removeprefix("kafka."): v
            for k, v in options.items()
            if k.startswith("kafka.")
            and k not in ("kafka.bootstrap.servers", "kafka.isolation.level")
        }
    )
    prefix = options.get("groupidprefix")
    if prefix is not None and "group.id" not in config:
        config["group.id"] = f"{prefix}-{uuid.uuid4()}"
    return config


def _value_options(options: Mapping[str, str]) -> tuple[str, str | None, str | None]:
    value_format = options.get("value.format", "binary").lower()
    if value_format not in VALUE_FORMATS:
        raise OptionError(f"value.format must be one of {VALUE_FORMATS}")
    if value_format == "binary":
        return value_format, None, None
    registry = options.get("schema.registry.url")
    if not registry:
        raise OptionError(f"value.format={value_format} needs schema.registry.url")
    subject = options.get("value.subject")
    if subject is None:
        topics = [t.strip() for t in options.get("subscribe", "").split(",") if t.strip()]
        if len(topics) != 1:
            raise OptionError(
                "value.format needs value.subject unless exactly one topic is "
                "subscribed (then <topic>-value)"
            )
        subject = f"{topics[0]}-value"
    return value_format, registry, subject
