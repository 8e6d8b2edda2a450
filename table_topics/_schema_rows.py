"""A topic's records as rows whose columns are the fields of its value's latest schema.

``ValueSchemaRows(registry_url, topic).rows(records)`` gives an Arrow table with the
record's own columns first::

    key binary, partition int32, offset int64, timestamp timestamp[ms, UTC],
    headers list<struct<key: string, value: binary>>

then one nullable column per field of the latest schema registered under
``<topic>-value`` (Avro, Protobuf or JSON Schema), and the records that cannot become
such a row, each a ``DeadLetter`` with the reason. Rows keep the order of their records.

Each call, in order:

1. Ask the registry for the subject's latest version (one request a call: a new
   version takes effect at the next batch, without a restart).
2. Decode every value with the schema its id names. Avro values are read as the latest
   schema (Avro's resolution: a field the writer lacked takes its default, a field the
   reader lacks is dropped); Protobuf and JSON Schema values decode with their writer's
   schema, and JSON Schema values are also validated against the latest. A tombstone
   (value ``None``) is a row whose value columns are null.
3. Fit the decoded values to the latest schema's Arrow columns in one conversion; when
   that fails, fit them one by one so that only the misfits become dead letters.

A record becomes a dead letter when its value is not in the registry's framing, names a
schema the registry does not have or of another type than the latest, does not resolve
against or validate with the latest schema, is not a record, or has a field whose value
does not fit its column; and every value does while the subject has no version, or one
whose values are not records or have a field named like a record column (tombstones
still become rows then, with no value columns). An unreachable registry is not the record's fault: it raises
(``StoreError``, retriable), and the batch is tried again.

What the writer must do with the rows (delta-rs):

* append with ``schema_mode="merge"`` (or merge with ``merge_schema=True``): a compatible
  new version's fields arrive as new nullable columns and the rows already written read
  null there; ``schema()`` is the Arrow schema of the latest rows for creating the table.
* a field whose type changes (an Avro ``int`` promoted to ``long``) changes its column's
  type, which a Delta schema merge refuses: that commit fails rather than rewriting.
* the timestamp is in milliseconds as Kafka keeps it; Delta stores microseconds, and
  delta-rs converts on write.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from headrace.schema_registry import RegistryClient, SchemaRegistryError
from headrace.schema_registry._errors import SubjectNotFound, VersionNotFound
from headrace.schema_registry._generic import RegistryDecoder
from headrace.spark_bridge._errors import DecodeError
from headrace.spark_bridge._registry_values import value_arrow_schema

from ._records import TopicRecord
from ._rows import key_value_rows, record_schema

RECORD_FIELDS = list(record_schema(with_value=False))
RECORD_COLUMNS = frozenset(f.name for f in RECORD_FIELDS)


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A record that could not become a row, and why."""

    record: TopicRecord
    reason: str


class _Latest:
    """What one version of the subject decides: its columns, its decoder, its validator.

    ``unusable`` says why no value can become a row (no version registered yet, values
    that are not records, a field named like a record column): then the value columns are
    none, every value is a dead letter with that reason, and a tombstone is still a row.
    """

    def __init__(self, registry: RegistryClient, subject: str) -> None:
        self.id: int | None = None
        self.fields = pa.schema([])
        self.unusable: str | None = None
        self.decoder: RegistryDecoder | None = None
        self.validator: Any = None
        try:
            fields, answer = value_arrow_schema(registry, subject)
        except (SubjectNotFound, VersionNotFound):
            self.unusable = f"no schema is registered under {subject}"
            return
        except DecodeError as exc:
            self.unusable = str(exc)
            return
        clash = sorted(RECORD_COLUMNS.intersection(fields.names))
        if clash:
            self.unusable = f"the value's field {clash[0]!r} has the name of a record column"
            return
        self.id = int(answer["id"])
        kind = str(answer.get("schemaType", "AVRO"))
        # Every column nullable: a tombstone, and the rows written before a field existed,
        # read null there.
        self.fields = pa.schema([f.with_nullable(True) for f in fields])
        self.decoder = RegistryDecoder(
            registry, kind, avro_reader=answer["schema"] if kind == "AVRO" else None
        )
        self.validator = self._json_validator(answer) if kind == "JSON" else None

    @staticmethod
    def _json_validator(answer: dict[str, Any]) -> Any:
        import json

        import jsonschema

        if answer.get("references"):
            # A document that refers to other subjects needs them resolved to validate;
            # its values are still typed by their columns in step 3.
            return None
        document = json.loads(answer["schema"])
        return jsonschema.validators.validator_for(document)(document)

    def decode(self, value: bytes | None) -> dict[str, Any] | None:
        """The value as a dict of fields; ValueError (with the reason) when it cannot be."""
        if value is None:
            return None
        if self.decoder is None:
            raise ValueError(self.unusable)
        try:
            decoded = self.decoder.decode(value)
        except SchemaRegistryError as exc:
            if exc.retriable:
                raise
            raise ValueError(f"value does not decode: {exc}") from None
        except Exception as exc:
            raise ValueError(
                f"value does not decode with schema {self.id}: {type(exc).__name__}: {exc}"
            ) from None
        if not isinstance(decoded, dict):
            raise ValueError(f"value is a {type(decoded).__name__}, not a record")
        if self.validator is not None:
            problem = next(iter(self.validator.iter_errors(decoded)), None)
            if problem is not None:
                raise ValueError(
                    f"value does not validate with schema {self.id}: {problem.message}"
                )
        return decoded


class ValueSchemaRows:
    """Rows for the table of ``topic``, typed by its value subject's latest schema."""

    def __init__(self, registry_url: str, topic: str) -> None:
        self.topic = topic
        self.subject = f"{topic}-value"
        self._registry = RegistryClient(registry_url)
        self._latest: _Latest | None = None

    def _refresh(self) -> _Latest:
        try:
            latest_id: int | None = int(self._registry.latest(self.subject)["id"])
        except (SubjectNotFound, VersionNotFound):
            latest_id = None
        if self._latest is None or self._latest.id != latest_id or latest_id is None:
            self._latest = _Latest(self._registry, self.subject)
        return self._latest

    def schema(self) -> pa.Schema:
        """The Arrow schema of the rows, as of the subject's latest version."""
        latest = self._refresh()
        return pa.schema([*RECORD_FIELDS, *latest.fields])

    def rows(self, records: list[TopicRecord]) -> tuple[pa.Table, list[DeadLetter]]:
        """The rows of ``records`` and the records that cannot be rows (module docstring)."""
        latest = self._refresh()
        schema = pa.schema([*RECORD_FIELDS, *latest.fields])
        kept: list[TopicRecord] = []
        values: list[dict[str, Any] | None] = []
        dead: list[DeadLetter] = []
        for record in records:
            try:
                values.append(latest.decode(record.value))
            except ValueError as exc:
                dead.append(DeadLetter(record, str(exc)))
            else:
                kept.append(record)
        columns, misfits = _fit(values, latest.fields)
        if misfits:
            dead += [DeadLetter(kept[i], reason) for i, reason in misfits.items()]
            kept = [r for i, r in enumerate(kept) if i not in misfits]
            dead.sort(key=lambda d: (d.record.partition, d.record.offset))
        own = key_value_rows(kept).drop_columns(["value"])
        table = pa.Table.from_arrays([*own.columns, *columns.columns], schema=schema)
        return table, dead


def tombstones(records: list[TopicRecord], dead: list[DeadLetter]) -> list[bool]:
    """Whether each row that ``rows(records)`` made is a tombstone, in the rows' order: the
    mask ``upsert`` takes, since a row of null value columns may also be a value whose
    fields are all null."""
    refused = {(d.record.partition, d.record.offset) for d in dead}
    return [r.value is None for r in records if (r.partition, r.offset) not in refused]


def _fit(values: list[dict[str, Any] | None], fields: pa.Schema) -> tuple[pa.Table, dict[int, str]]:
    """The values as a table of ``fields``, and the reason each misfit (by index) was left
    out. One conversion for the whole batch; one per value only when that fails."""
    # A tombstone is a row of nulls; a row with no value for a field is null there.
    rows = [{} if v is None else v for v in values]
    try:
        return pa.Table.from_pylist(rows, schema=fields), {}
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError):
        pass
    misfits: dict[int, str] = {}
    for i, row in enumerate(rows):
        try:
            pa.Table.from_pylist([row], schema=fields)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError) as exc:
            misfits[i] = f"value does not fit the latest schema's columns: {exc}"
    fitting = [row for i, row in enumerate(rows) if i not in misfits]
    return pa.Table.from_pylist(fitting, schema=fields), misfits
