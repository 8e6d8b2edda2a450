"""Records to the rows of a table, and the derived partition column.

Every mode's rows start with the record's own columns, in this order::

    key binary, partition int32, offset int64, timestamp timestamp[ms, UTC],
    headers list<struct<key: string, value: binary>>

``key_value`` adds ``value binary``; ``value_schema_latest`` adds the columns of the
registry's latest value schema (``_schema_rows``). ``headrace.table.partition.by =
hour(timestamp)`` partitions by a derived column ``timestamp_hour``, the record's hour
in UTC as text (``2026-11-28-20``), which sorts as time does.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ._records import TopicRecord
from ._settings import HOUR_OF_TIMESTAMP

HOUR_COLUMN = "timestamp_hour"


def record_schema(with_value: bool) -> Any:
    """The Arrow schema of ``key_value`` rows (``with_value``), or of the record columns."""
    header = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
    fields = [
        pa.field("key", pa.binary()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.timestamp("ms", tz="UTC")),
        pa.field("headers", pa.list_(header)),
    ]
    if with_value:
        fields.append(pa.field("value", pa.binary()))
    return pa.schema(fields)


def key_value_rows(records: list[TopicRecord]) -> Any:
    """The rows of a ``key_value`` table, one per record, in the records' order (the
    writer makes them from the messages it fetched: ``Fetched.key_value_rows``)."""
    schema = record_schema(with_value=True)
    return pa.Table.from_arrays(
        [
            pa.array([r.key for r in records], pa.binary()),
            pa.array([r.partition for r in records], pa.int32()),
            pa.array([r.offset for r in records], pa.int64()),
            pa.array([r.timestamp_ms for r in records], pa.int64()).cast(
                schema.field("timestamp").type
            ),
            pa.array(
                [[{"key": k, "value": v} for k, v in r.headers] for r in records],
                schema.field("headers").type,
            ),
            pa.array([r.value for r in records], pa.binary()),
        ],
        schema=schema,
    )


def partition_columns(partition_by: str) -> list[str] | None:
    """The Delta partition columns ``headrace.table.partition.by`` asks for."""
    if not partition_by:
        return None
    return [HOUR_COLUMN if partition_by == HOUR_OF_TIMESTAMP else partition_by]


def with_partition_column(rows: Any, partition_by: str) -> Any:
    """``rows`` with the derived column ``hour(timestamp)`` needs; others as they are.
    A named column the rows lack is refused here, with the columns they have."""
    if not partition_by:
        return rows
    if partition_by == HOUR_OF_TIMESTAMP:
        hours = pc.strftime(rows["timestamp"], format="%Y-%m-%d-%H")
        return rows.append_column(HOUR_COLUMN, hours)
    if partition_by not in rows.column_names:
        raise ValueError(
            f"headrace.table.partition.by={partition_by}: the rows have no such column"
            f" (they have {', '.join(rows.column_names)})"
        )
    return rows
