"""JSON record values as columns: Spark schemas from pydantic models, and decoders.

Two places decode: Spark (``decode_json`` turns the binary ``value`` column into typed
columns, no ``from_json`` boilerplate) and the export job (``json_values_to_arrow``
parses a chunk of values in Arrow's C++ JSON reader).
"""

from __future__ import annotations

import datetime
import types
import typing
from typing import Any

from ._deps import require
from ._errors import DecodeError, OptionError


def _spark_type(annotation: Any) -> Any:
    t = require("pyspark.sql.types")
    origin = typing.get_origin(annotation)
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if origin in (typing.Union, types.UnionType) and len(args) == 1:
        return _spark_type(args[0])
    if origin in (list, tuple, set, frozenset):
        return t.ArrayType(_spark_type(args[0]) if args else t.StringType())
    if origin is dict:
        return t.MapType(_spark_type(args[0]), _spark_type(args[1]))
    simple = {
        bool: t.BooleanType(),
        int: t.LongType(),
        float: t.DoubleType(),
        str: t.StringType(),
        bytes: t.BinaryType(),
        datetime.datetime: t.TimestampType(),
        datetime.date: t.DateType(),
    }
    if annotation in simple:
        return simple[annotation]
    if isinstance(annotation, type) and hasattr(annotation, "model_fields"):
        return spark_schema(annotation)
    raise OptionError(f"no Spark type for {annotation!r}")


def spark_schema(model: type[Any]) -> Any:
    """A Spark ``StructType`` for a pydantic model (field aliases become column names)."""
    t = require("pyspark.sql.types")
    fields = []
    for name, info in model.model_fields.items():
        # Always nullable: from_json gives null for a missing or malformed field.
        fields.append(t.StructField(info.alias or name, _spark_type(info.annotation), True))
    return t.StructType(fields)


def decode_json(
    frame: Any,
    schema: Any,
    *,
    column: str = "value",
    keep: tuple[str, ...] = ("key", "topic", "partition", "offset", "timestamp"),
) -> Any:
    """``frame`` with the JSON in ``column`` parsed into top-level columns.

    ``schema`` is a StructType, a DDL string or a pydantic model class. Columns in
    ``keep`` that the frame has are kept in front (a value field of the same name wins).
    Malformed JSON gives nulls, as ``from_json`` does.
    """
    f = require("pyspark.sql.functions")
    if isinstance(schema, type) and hasattr(schema, "model_fields"):
        schema = spark_schema(schema)
    parsed = frame.withColumn("__json", f.from_json(f.col(column).cast("string"), schema))
    names = parsed.select("__json.*").columns
    front = [c for c in keep if c in frame.columns and c not in names]
    return parsed.select(*front, "__json.*")


def json_values_to_arrow(values: Any, schema: Any | None = None) -> Any:
    """Parse a binary Arrow array of JSON objects into a table of their fields.

    Nulls (tombstones) become rows of nulls. Values are joined into one
    newline-delimited buffer for Arrow's reader; if a value spans lines or the reader
    disagrees on the row count, each value is parsed on its own instead. A value that is
    not a JSON object, or does not fit the columns, raises ``DecodeError`` with its index
    as ``row``.
    """
    pa = require("pyarrow")
    pc = require("pyarrow.compute")
    pj = require("pyarrow.json")
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    filled = pc.fill_null(values.cast(pa.binary()), pa.scalar(b"{}", pa.binary()))
    parse = (
        pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
        if schema is not None
        else pj.ParseOptions()
    )
    if (
        len(filled)
        and not pc.any(pc.binary_length(filled) == 0).as_py()
        and not pc.any(pc.match_substring(filled.cast(pa.large_binary()), "\n")).as_py()
    ):
        one_list = pa.LargeListArray.from_arrays(
            pa.array([0, len(filled)], pa.int64()), filled.cast(pa.large_binary())
        )
        buffer = pc.binary_join(one_list, pa.scalar(b"\n", pa.large_binary()))[0].as_buffer()
        try:
            table = pj.read_json(pa.BufferReader(buffer), parse_options=parse)
            if table.num_rows == len(filled):
                return table
        except pa.ArrowInvalid:
            pass
    rows = [_json_object(i, v) for i, v in enumerate(filled.to_pylist())]
    try:
        return pa.Table.from_pylist(rows, schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        bad = _first_misfit(pa, rows, schema)
        raise DecodeError(f"value does not fit the columns ({exc})", row=bad) from None


def _json_object(row: int, value: bytes) -> dict[str, Any]:
    import orjson

    try:
        parsed = orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        raise DecodeError(f"value is not JSON ({exc})", row=row) from None
    if not isinstance(parsed, dict):
        raise DecodeError(f"value is JSON but not an object (a {type(parsed).__name__})", row=row)
    return parsed


def _first_misfit(pa: Any, rows: list[dict[str, Any]], schema: Any) -> int:
    """The index of the first row that cannot join the rows before it (the error path
    only: a binary search over prefixes, since a prefix that fails fails when longer)."""
    low, high = 0, len(rows)  # rows[:low] converts; rows[:high] fails
    while high - low > 1:
        mid = (low + high) // 2
        try:
            pa.Table.from_pylist(rows[:mid], schema=schema)
            low = mid
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            high = mid
    return high - 1
