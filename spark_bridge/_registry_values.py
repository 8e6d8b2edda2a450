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

    texts = [decoder.avro_reader] if decoder.avro_reader else []
    texts += [
        a["schema"]
        for a in reversed(list(decoder.schemas.values()))
        if a.get("schemaType", "AVRO") == "AVRO"
    ]
    for text in texts:
        if text:
            parsed = fastavro.parse_schema(json.loads(text))
            record = arrow_type(pa, parsed, {})
            if pa.types.is_struct(record):
                return pa.schema(list(record))
    return None


# -- the columns a subject's latest schema promises, for Spark ----------------------------


def value_arrow_schema(registry: Any, subject: str) -> tuple[Any, dict[str, Any]]:
    """The Arrow columns of the latest schema registered under ``subject`` (an Avro or
    JSON Schema record's fields, or a Protobuf file's first message's fields), and that
    schema as the registry answered it."""
    import base64
    import json
    import urllib.parse

    import fastavro

    pa = require("pyarrow")
    quoted = urllib.parse.quote(subject, safe="")
    latest = registry.request("GET", f"/subjects/{quoted}/versions/latest?format=serialized")
    kind = latest.get("schemaType", "AVRO")
    if kind == "AVRO":
        record = arrow_type(pa, fastavro.parse_schema(json.loads(latest["schema"])), {})
    elif kind == "JSON":
        record = _json_schema_type(pa, json.loads(latest["schema"]))
    else:
        from google.protobuf import descriptor_pb2, descriptor_pool

        from headrace.schema_registry._schema import _well_known

        file = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(latest["schema"]))
        pool = descriptor_pool.DescriptorPool()
        for dep in file.dependency:
            pool.Add(_well_known(dep))
        pool.Add(file)
        message = pool.FindFileByName(file.name).message_types_by_name[file.message_type[0].name]
        record = _proto_type(pa, message)
    if not pa.types.is_struct(record):
        raise DecodeError(f"the values of {subject} are not records: no columns to make")
    return pa.schema(list(record)), latest


def _json_schema_type(pa: Any, schema: Any) -> Any:
    kind = schema.get("type") if isinstance(schema, dict) else None
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if len(kinds) == 1 else None
    if kind == "object" or (kind is None and isinstance(schema, dict) and "properties" in schema):
        return pa.struct(
            [
                pa.field(name, _json_schema_type(pa, sub))
                for name, sub in schema.get("properties", {}).items()
            ]
        )
    if kind == "array":
        return pa.list_(_json_schema_type(pa, schema.get("items", {})))
    return {
        "string": pa.string(),
        "integer": pa.int64(),
        "number": pa.float64(),
        "boolean": pa.bool_(),
    }.get(str(kind), pa.string())


def _proto_type(pa: Any, message: Any) -> Any:
    from google.protobuf.descriptor import FieldDescriptor as F

    scalar = {
        F.TYPE_DOUBLE: pa.float64(),
        F.TYPE_FLOAT: pa.float32(),
        F.TYPE_INT64: pa.int64(),
        F.TYPE_UINT64: pa.uint64(),
        F.TYPE_INT32: pa.int32(),
        F.TYPE_FIXED64: pa.uint64(),
        F.TYPE_FIXED32: pa.uint32(),
        F.TYPE_BOOL: pa.bool_(),
        F.TYPE_STRING: pa.string(),
        F.TYPE_BYTES: pa.string(),  # JSON mapping: base64
        F.TYPE_UINT32: pa.uint32(),
        F.TYPE_ENUM: pa.string(),
        F.TYPE_SFIXED32: pa.int32(),
        F.TYPE_SFIXED64: pa.int64(),
        F.TYPE_SINT32: pa.int32(),
        F.TYPE_SINT64: pa.int64(),
    }
    fields = []
    for field in message.fields:
        kind = (
            _proto_type(pa, field.message_type)
            if field.type == F.TYPE_MESSAGE
            else scalar[field.type]
        )
        if field.is_repeated:
            kind = pa.list_(kind)
        fields.append(pa.field(field.name, kind))
    return pa.struct(fields)


def decode_registry(
    frame: Any,
    registry_url: str,
    subject: str,
    *,
    column: str = "value",
    keep: tuple[str, ...] = ("key", "topic", "partition", "offset", "timestamp"),
) -> Any:
    """``frame`` with the registry-framed values in ``column`` decoded into typed
    top-level columns: the fields of ``subject``'s latest schema (Avro, Protobuf or JSON
    Schema), whichever schema each record was written with. Columns in ``keep`` that
    the frame has stay in front. A value that does not decode fails the query, naming
    why; nulls (tombstones) give rows of nulls."""
    from pyspark.sql.pandas.types import from_arrow_schema
    from pyspark.sql.types import StructType

    from headrace.schema_registry import RegistryClient
    from headrace.schema_registry._generic import RegistryDecoder

    pa = require("pyarrow")
    fields, latest = value_arrow_schema(RegistryClient(registry_url), subject)
    # Avro values of every version read as the latest, its defaults filling the gaps.
    avro_reader = latest["schema"] if latest.get("schemaType", "AVRO") == "AVRO" else None
    front = [c for c in keep if c in frame.columns and c not in fields.names]
    source = frame.select(*front, column)
    out = StructType([*(source.schema[name] for name in front), *from_arrow_schema(fields).fields])
    names = [*front, *fields.names]

    def decode(batches: Any) -> Any:
        decoder = RegistryDecoder(registry_url, avro_reader=avro_reader)
        for batch in batches:
            values = registry_values_to_arrow(batch.column(column), decoder, fields)
            arrays = [batch.column(name) for name in front]
            arrays += [c.combine_chunks() for c in values.columns]
            yield pa.RecordBatch.from_arrays(arrays, names=names)

    return source.mapInArrow(decode, out)


class ValueColumns:
    """The data source's ``value.format``: Kafka's columns with ``value`` replaced by the
    fields of the subject's latest schema. Built on the driver (one registry request),
    pickled to the workers, where each decodes with its own cached registry client."""

    def __init__(self, registry_url: str, subject: str) -> None:
        from headrace.schema_registry import RegistryClient

        self.registry_url = registry_url
        self.fields, latest = value_arrow_schema(RegistryClient(registry_url), subject)
        self.avro_reader = latest["schema"] if latest.get("schemaType", "AVRO") == "AVRO" else None
        self._decoder: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_decoder": None}

    def spark_schema(self, records: Any) -> Any:
        from pyspark.sql.pandas.types import from_arrow_schema

        pa = require("pyarrow")
        kept = [f for f in records if f.name != "value" and f.name not in self.fields.names]
        return from_arrow_schema(pa.schema([*kept, *self.fields]))

    def decode(self, batch: Any) -> Any:
        from headrace.schema_registry._generic import RegistryDecoder

        pa = require("pyarrow")
        if self._decoder is None:
            self._decoder = RegistryDecoder(self.registry_url, avro_reader=self.avro_reader)
        values = registry_values_to_arrow(batch.column("value"), self._decoder, self.fields)
        kept = [n for n in batch.schema.names if n != "value" and n not in self.fields.names]
        arrays = [batch.column(n) for n in kept] + [c.combine_chunks() for c in values.columns]
        return pa.RecordBatch.from_arrays(arrays, names=[*kept, *self.fields.names])
