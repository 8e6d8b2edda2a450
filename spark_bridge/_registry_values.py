"""Registry-framed values (Avro, Protobuf, JSON Schema) as typed Arrow columns.

Each value names its writer's schema by id; ``headrace.schema_registry`` decodes it to
Python. The columns' types come from the Avro schema itself where there is one (an
Avro ``long`` is an int64 column even in a chunk of nulls), and otherwise from the
decoded values, Arrow's inference; once a table exists its schema is kept, so every
commit appends the same columns.
"""

from __future__ import annotations

from typing import Any

from ._deps import require
from ._errors import DecodeError

REGISTRY_FORMATS = ("avro", "protobuf", "json-schema")


def arrow_type(pa: Any, avro: Any, named: dict[str, Any]) -> Any:
    """The Arrow type of a (fastavro-parsed) Avro schema."""
    if isinstance(avro, list):
        branches = [b for b in avro if b != "null"]
        return arrow_type(pa, branches[0], named) if len(branches) == 1 else pa.string()
    if isinstance(avro, str):
        if avro in named:
            return arrow_type(pa, named[avro], named)
        return {
            "null": pa.null(),
            "boolean": pa.bool_(),
            "int": pa.int32(),
            "long": pa.int64(),
            "float": pa.float32(),
            "double": pa.float64(),
            "bytes": pa.binary(),
            "string": pa.string(),
        }[avro]
    logical = avro.get("logicalType")
    if logical in ("timestamp-millis", "timestamp-micros"):
        return pa.timestamp("ms" if logical.endswith("millis") else "us", tz="UTC")
    if logical == "date":
        return pa.date32()
    kind = avro["type"]
    if kind in ("record", "error"):
        named[avro["name"]] = avro
        return pa.struct(
            [pa.field(f["name"], arrow_type(pa, f["type"], named)) for f in avro["fields"]]
        )
    if kind == "enum":
        named[avro["name"]] = avro
        return pa.string()
    if kind == "fixed":
        named[avro["name"]] = avro
        return pa.binary(avro["size"])
    if kind == "array":
        return pa.list_(arrow_type(pa, avro["items"], named))
    if kind == "map":
        return pa.map_(pa.string(), arrow_type(pa, avro["values"], named))
    return arrow_type(pa, kind, named)


def registry_values_to_arrow(values: Any, decoder: Any, schema: Any | None = None) -> Any:
    """Decode a binary Arrow array of registry-framed values into a table of the value's
    fields. A value that does not decode or fit raises DecodeError with its ``row``."""
    pa = require("pyarrow")
    rows = []
    for row, value in enumerate(values.to_pylist()):
        try:
            decoded = decoder.decode(value)
        except Exception as exc:
            raise DecodeError(f"value does not decode ({exc})", row=row) from None
        if decoded is not None and not isinstance(decoded, dict):
            raise DecodeError(f"value is a {type(decoded).__name__}, not a record", row=row)
        rows.append(decoded or {})
    if schema is None:
        schema = _schema_of(pa, decoder)
    try:
        return pa.Table.from_pylist(rows, schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise DecodeError(f"values do not fit the columns ({exc})") from None


def _schema_of(pa: Any, decoder: Any) -> Any:
    """The columns of the newest Avro schema seen, or None (infer) for other types."""
    import json

    import fastavro

    for answer in reversed(list(decoder.schemas.values())):
        if answer.get("schemaType", "AVRO") == "AVRO":
            parsed = fastavro.parse_schema(json.loads(answer["schema"]))
            record = arrow_type(pa, parsed, {})
            if pa.types.is_struct(record):
                return pa.schema(list(record))
    return None
