"""The options of ``df.write.format("headrace")`` and ``writeStream.format("headrace")``.

Named as Spark's Kafka sink names them: ``kafka.bootstrap.servers`` (required),
``topic`` (overrides a ``topic`` column), and any other ``kafka.``-prefixed key handed to
the producer, except the ones Spark's sink refuses and ``transactional.id``, which the
streaming write derives itself. This sink's own: ``value.format`` (``avro`` or
``json-schema``: a struct ``value`` column serialized by the schema registry),
``schema.registry.url`` and ``value.subject``, as the read side spells them. A read
option, or any key neither knows, fails with an error naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ._errors import OptionError
from ._options import librdkafka_config

# Options Spark passes along with a streaming write's (or ``save(path)``'s) own, which
# say nothing to the sink.
_SPARK_PASSED = {"path", "checkpointlocation", "queryname"}
_OWN_OPTIONS = {
    "kafka.bootstrap.servers",
    "topic",
    "value.format",
    "schema.registry.url",
    "value.subject",
}
# kafka.* settings Spark's sink refuses, and why; transactional.id is this sink's to set.
REFUSED_KAFKA = {
    "key.serializer": "keys are written as bytes (a string key as its UTF-8)",
    "value.serializer": "values are written as bytes; use value.format for the registry",
    "transactional.id": "a streaming write derives one per query and Spark partition",
}
_READ_ONLY = {
    "subscribe",
    "subscribepattern",
    "assign",
    "startingoffsets",
    "endingoffsets",
    "startingtimestamp",
    "endingtimestamp",
    "startingoffsetsbytimestamp",
    "endingoffsetsbytimestamp",
    "startingoffsetsbytimestampstrategy",
    "failondataloss",
    "maxoffsetspertrigger",
    "minpartitions",
    "maxpartitions",
    "includeheaders",
    "groupidprefix",
    "isolation.level",
    "kafkaconsumer.polltimeoutms",
}
SINK_VALUE_FORMATS = ("binary", "avro", "json-schema")


@dataclass(frozen=True)
class SinkOptions:
    bootstrap_servers: str
    topic: str | None = None  # the ``topic`` option; else each row's topic column
    value_format: str = "binary"
    schema_registry_url: str | None = None
    value_subject: str | None = None  # default: <topic>-value
    producer_config: dict[str, str] = field(default_factory=dict)


def parse_sink_options(raw: Mapping[str, str]) -> SinkOptions:
    """Validate a write's options; keys are case-insensitive, as Spark's are."""
    options = {k.lower(): str(v) for k, v in raw.items()}
    _check_known(options)
    bootstrap = options.get("kafka.bootstrap.servers")
    if not bootstrap:
        raise OptionError("option kafka.bootstrap.servers is required")
    topic = options.get("topic")
    if topic is not None and not topic.strip():
        raise OptionError("option topic is empty")
    value_format = options.get("value.format", "binary").lower()
    if value_format not in SINK_VALUE_FORMATS:
        raise OptionError(f"value.format for writes must be one of {SINK_VALUE_FORMATS}")
    registry = options.get("schema.registry.url")
    if value_format != "binary" and not registry:
        raise OptionError(f"value.format={value_format} needs schema.registry.url")
    subject = options.get("value.subject")
    if subject is None and topic is not None:
        subject = f"{topic.strip()}-value"  # the registry's TopicNameStrategy
    if value_format != "binary" and subject is None:
        raise OptionError("value.format needs value.subject unless the topic option is set")
    producer = librdkafka_config(
        {
            k.removeprefix("kafka."): v
            for k, v in options.items()
            if k.startswith("kafka.") and k != "kafka.bootstrap.servers"
        }
    )
    return SinkOptions(
        bootstrap_servers=bootstrap,
        topic=topic.strip() if topic is not None else None,
        value_format=value_format,
        schema_registry_url=registry if value_format != "binary" else None,
        value_subject=subject,
        producer_config=producer,
    )


def _check_known(options: Mapping[str, str]) -> None:
    """Fail on a key this sink would otherwise ignore, naming it."""
    for key in sorted(options):
        setting = key.removeprefix("kafka.")
        if key.startswith("kafka.") and setting in REFUSED_KAFKA:
            raise OptionError(
                f"Kafka option {setting!r} is not supported for writes: {REFUSED_KAFKA[setting]}"
            )
        if key in _READ_ONLY:
            raise OptionError(f"option {key!r} is for reads; a write does not take it")
        if not key.startswith("kafka.") and key not in _OWN_OPTIONS | _SPARK_PASSED:
            raise OptionError(
                f"unknown option {key!r} for writes (Kafka producer settings take a kafka. prefix)"
            )
