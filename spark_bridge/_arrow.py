"""Kafka records as Arrow: the columns of Spark's Kafka source, built column by column.

    key binary, value binary, topic string, partition int, offset long,
    timestamp timestamp, timestampType int [, headers array<struct<key string, value binary>>]

Timestamps are microseconds in UTC, which is what Spark and Delta store.
"""

from __future__ import annotations

from typing import Any

from ._deps import require
from ._kafka import Columns

SPARK_DDL = (
    "key binary, value binary, topic string, partition int, offset long,"
    " timestamp timestamp, timestampType int"
)
HEADERS_DDL = "headers array<struct<key: string, value: binary>>"


def spark_ddl(include_headers: bool) -> str:
    """The data source schema as a Spark DDL string."""
    return f"{SPARK_DDL}, {HEADERS_DDL}" if include_headers else SPARK_DDL


def record_schema(include_headers: bool) -> Any:
    pa = require("pyarrow")
    fields = [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),
        pa.field("timestampType", pa.int32()),
    ]
    if include_headers:
        header = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
        fields.append(pa.field("headers", pa.list_(header)))
    return pa.schema(fields)


def to_record_batch(cols: Columns, schema: Any) -> Any:
    """One ``pyarrow.RecordBatch`` in ``schema`` from a fetched chunk."""
    pa = require("pyarrow")
    pc = require("pyarrow.compute")
    n = len(cols)
    millis = pa.array(cols.timestamps, pa.int64())
    micros = pc.multiply(millis, pa.scalar(1000, pa.int64())).cast(pa.timestamp("us", tz="UTC"))
    kinds = cols.timestamp_types
    arrays = [
        pa.array(cols.keys, pa.binary()),
        pa.array(cols.values, pa.binary()),
        # Constant columns are filled in C rather than converted value by value.
        pa.repeat(pa.scalar(cols.topic, pa.string()), n),
        pa.array(cols.partitions, pa.int32()),
        pa.array(cols.offsets, pa.int64()),
        micros,
        pa.repeat(pa.scalar(kinds[0], pa.int32()), n)
        if n and kinds.count(kinds[0]) == n
        else pa.array(kinds, pa.int32()),
    ]
    if schema.get_field_index("headers") >= 0:
        arrays.append(
            pa.array(
                [[{"key": k, "value": v} for k, v in h] if h else [] for h in (cols.headers or [])]
                if cols.headers is not None
                else [[]] * n,
                schema.field("headers").type,
            )
        )
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
