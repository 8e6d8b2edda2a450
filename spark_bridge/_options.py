"""The data source's options, named as in Spark's own Kafka source.

Keys are case-insensitive (Spark lower-cases them on the way in). Any other
``kafka.``-prefixed key is handed to the Kafka client unchanged, the way Spark's
source passes ``kafka.*`` through to its consumer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from headrace.base import ClientSecurity

from ._errors import OptionError
from ._offsets import OffsetSpec, TopicPartition, parse_offset_spec

ISOLATION_LEVELS = ("read_committed", "read_uncommitted")
_SECURITY_PREFIXES = ("security.", "sasl.", "ssl.")
_KNOWN = {
    "kafka.bootstrap.servers",
    "subscribe",
    "subscribepattern",
    "assign",
    "startingoffsets",
    "endingoffsets",
    "maxoffsetspertrigger",
    "maxpartitions",
    "isolation.level",
    "kafka.isolation.level",
    "includeheaders",
    "failondataloss",
    "path",
    "value.format",
    "schema.registry.url",
    "value.subject",
}
VALUE_FORMATS = ("binary", "avro", "protobuf", "json-schema")


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
    starting: OffsetSpec
    ending: OffsetSpec
    max_offsets_per_trigger: int | None = None
    # Spark partitions per read (each reads its ranges through one consumer); None:
    # the CPUs of the planning process (``_packing.py``).
    max_partitions: int | None = None
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
    latest; ``endingOffsets`` exists only for batch reads.
    """
    options = {k.lower(): str(v) for k, v in raw.items()}
    bootstrap = options.get("kafka.bootstrap.servers")
    if not bootstrap:
        raise OptionError("option kafka.bootstrap.servers is required")
    starting = parse_offset_spec(
        options.get("startingoffsets", "latest" if streaming else "earliest"),
        option="startingOffsets",
    )
    if streaming and "endingoffsets" in options:
        raise OptionError("endingOffsets is for batch reads; a stream has no end")
    ending = parse_offset_spec(
        options.get("endingoffsets", "latest"), option="endingOffsets", allow_earliest=False
    )
    if not streaming and starting == "latest":
        raise OptionError("startingOffsets=latest makes an empty batch read; use a stream")
    max_per_trigger: int | None = None
    if "maxoffsetspertrigger" in options:
        if streaming is False:
            raise OptionError("maxOffsetsPerTrigger is for streaming reads")
        try:
            max_per_trigger = int(options["maxoffsetspertrigger"])
        except ValueError as exc:
            raise OptionError("maxOffsetsPerTrigger must be a whole number") from exc
        if max_per_trigger <= 0:
            raise OptionError("maxOffsetsPerTrigger must be positive")
    max_partitions = _positive_int(options, "maxpartitions", "maxPartitions")
    isolation = options.get(
        "isolation.level", options.get("kafka.isolation.level", "read_committed")
    ).lower()
    if isolation not in ISOLATION_LEVELS:
        raise OptionError(f"isolation.level must be one of {ISOLATION_LEVELS}")
    client_config = librdkafka_config(
        {
            k.removeprefix("kafka."): v
            for k, v in options.items()
            if k.startswith("kafka.") and k not in _KNOWN
        }
    )
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
        max_partitions=max_partitions,
        isolation_level=isolation,
        include_headers=_bool(options, "includeheaders", False),
        fail_on_data_loss=_bool(options, "failondataloss", True),
        client_config=client_config,
    )


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
