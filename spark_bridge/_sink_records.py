"""Rows of a DataFrame as Kafka records, by the column rules of Spark's Kafka sink.

Spark's sink reads five columns and ignores the rest: ``value`` (required, string or
binary; null is a tombstone), ``key`` (string or binary), ``topic`` (string; the
``topic`` option overrides it), ``partition`` (int; absent or null lets the producer's
partitioner choose) and ``headers`` (``array<struct<key:string,value:binary>>``). A
string is written as its UTF-8 bytes. With ``value.format`` the ``value`` column is a
struct instead, serialized by the schema registry (``_sink_values.py``).

The layout is checked on the driver against the DataFrame's Spark schema, so a wrong
column fails the write before any task starts; tasks then turn Arrow batches into
column lists with no per-row type checks.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ._deps import require
from ._errors import OptionError
from ._sink_options import SinkOptions
from ._sink_values import RegistryValues


@dataclass(frozen=True)
class Records:
    """One Arrow batch as parallel lists: ``partitions`` entries are -1 where the
    producer chooses, ``headers`` entries None where a row has none."""

    topics: list[str]
    partitions: list[int]
    keys: list[bytes | None]
    values: list[bytes | None]
    headers: list[list[tuple[str, bytes | None]] | None]

    def __len__(self) -> int:
        return len(self.values)


class RecordLayout:
    """Which of Spark's sink columns a DataFrame has, checked once; picklable."""

    def __init__(self, schema: Any, options: SinkOptions) -> None:
        from pyspark.sql.types import (
            ArrayType,
            BinaryType,
            IntegerType,
            StringType,
            StructType,
        )

        names = {f.name: f.dataType for f in schema.fields}
        text_or_bytes = (StringType, BinaryType)
        self.topic = options.topic
        if self.topic is None:
            if "topic" not in names:
                raise OptionError(
                    "topic option required when no 'topic' attribute is present. Use the"
                    " topic option for setting a topic."
                )
            if not isinstance(names["topic"], StringType):
                raise OptionError(f"Topic type must be a StringType, not {names['topic']}")
        self.has_key = "key" in names
        if self.has_key and not isinstance(names["key"], text_or_bytes):
            raise OptionError(
                f"key attribute type must be a StringType or BinaryType, not {names['key']}"
            )
        if "value" not in names:
            raise OptionError("Required attribute 'value' not found")
        self.registry: RegistryValues | None = None
        if options.value_format == "binary":
            if not isinstance(names["value"], text_or_bytes):
                raise OptionError(
                    "value attribute type must be a StringType or BinaryType, not"
                    f" {names['value']} (a struct value needs value.format avro or"
                    " json-schema)"
                )
        else:
            if not isinstance(names["value"], StructType):
                raise OptionError(
                    f"value.format={options.value_format} writes a struct value column,"
                    f" not {names['value']}"
                )
            assert options.schema_registry_url and options.value_subject  # options check
            self.registry = RegistryValues(
                options.schema_registry_url,
                options.value_subject,
                options.value_format,
                names["value"],
            )
        self.has_partition = "partition" in names
        if self.has_partition and not isinstance(names["partition"], IntegerType):
            raise OptionError(
                f"partition attribute type must be an IntegerType, not {names['partition']}"
            )
        self.has_headers = "headers" in names
        if self.has_headers:
            kind = names["headers"]
            element = kind.elementType if isinstance(kind, ArrayType) else None
            fields = (
                {f.name: f.dataType for f in element.fields}
                if isinstance(element, StructType)
                else {}
            )
            if set(fields) != {"key", "value"} or not (
                isinstance(fields["key"], StringType) and isinstance(fields["value"], BinaryType)
            ):
                raise OptionError(
                    "headers attribute type must be an array<struct<key:string,value:binary>>,"
                    f" not {kind.simpleString()}"
                )

    def records(self, batches: Iterator[Any]) -> Iterator[Records]:
        """The records of each Arrow batch a task is handed."""
        pa = require("pyarrow")
        encode = self.registry.encoder() if self.registry is not None else None
        for batch in batches:
            n = batch.num_rows
            if n == 0:
                continue
            if self.topic is not None:
                topics = [self.topic] * n
            else:
                topics = batch.column("topic").to_pylist()
                if None in topics:
                    raise OptionError(
                        "null topic present in the data. Use the topic option for setting a topic."
                    )
            keys: list[bytes | None] = (
                _as_bytes(pa, batch.column("key")) if self.has_key else [None] * n
            )
            if encode is None:
                values = _as_bytes(pa, batch.column("value"))
            else:
                values = [encode(v) for v in batch.column("value").to_pylist()]
            partitions = (
                [-1 if p is None else p for p in batch.column("partition").to_pylist()]
                if self.has_partition
                else [-1] * n
            )
            headers: list[list[tuple[str, bytes | None]] | None] = (
                [
                    None if hs is None else [(h["key"], h["value"]) for h in hs]
                    for hs in batch.column("headers").to_pylist()
                ]
                if self.has_headers
                else [None] * n
            )
            yield Records(topics, partitions, keys, values, headers)


def _as_bytes(pa: Any, column: Any) -> list[bytes | None]:
    """A string or binary column as bytes: a string's UTF-8 is its binary form already,
    so the cast copies nothing."""
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        column = column.cast(
            pa.large_binary() if pa.types.is_large_string(column.type) else pa.binary()
        )
    values: list[bytes | None] = column.to_pylist()
    return values
