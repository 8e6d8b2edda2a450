"""The hand-off job: copy a topic into a Delta table, exactly once, resumable.

No Spark is involved: librdkafka fetches, Arrow holds the columns, delta-rs commits.
Each commit carries the next offset of every partition it covers (see ``DeltaSink``),
so the table itself is the checkpoint. A rerun starts where the table says and copies
only what is new; a crash between commits loses nothing and duplicates nothing.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from headrace.base import check_transition, transition_table

from ._arrow import record_schema, to_record_batch
from ._delta import DeltaSink
from ._deps import require
from ._errors import DecodeError, OptionError, SparkBridgeError
from ._kafka import ConfluentClient, KafkaClient
from ._offsets import OffsetRange, TopicPartition, parse_offset_spec, plan_ranges, resolve
from ._options import Subscription

VALUE_FORMATS = ("binary", "json", "avro", "protobuf", "json-schema")
ENGINES = ("delta-rs", "delta-spark")
"""Who writes the table: this job (delta-rs, no JVM), or a Structured Streaming job
through delta-spark (``DeltaSparkExport``). The rows are the same."""


class ExportState(enum.Enum):
    CREATED = "created"
    PLANNED = "planned"
    COPYING = "copying"
    FINISHED = "finished"
    FAILED = "failed"


_TRANSITIONS = transition_table(
    {
        ExportState.CREATED: {ExportState.PLANNED, ExportState.FAILED},
        ExportState.PLANNED: {ExportState.COPYING, ExportState.FINISHED, ExportState.FAILED},
        ExportState.COPYING: {ExportState.FINISHED, ExportState.FAILED},
        ExportState.FINISHED: set(),
        ExportState.FAILED: set(),
    }
)


@dataclass
class ExportResult:
    """What one run did: ``ranges`` were planned, ``records`` rows were committed."""

    ranges: list[OffsetRange] = field(default_factory=list)
    records: int = 0
    commits: int = 0
    seconds: float = 0.0
    resumed_from: dict[TopicPartition, int] = field(default_factory=dict)

    @property
    def planned(self) -> int:
        return sum(r.size for r in self.ranges)


@dataclass
class Commit:
    """Reported to ``on_commit`` after each Delta commit."""

    records: int
    ends: dict[TopicPartition, int]


class ExportJob:
    """One run of the hand-off from ``topic`` to the table at ``delta_path``.

    ``run()`` in order:
      1. plan: list the topic's partitions and their latest offsets (the run copies up
         to these, so it ends even while producers keep writing); the start of each
         partition is what the table recorded, else ``starting``;
      2. copy: read each range in chunks; buffer chunks until ``commit_records`` rows;
      3. commit: one Delta commit per buffer, with the rows and every covered
         partition's next offset; then ``on_commit`` is told;
      4. finish once every range is committed.
    """

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        delta_path: str,
        *,
        starting: str = "earliest",
        value_format: str = "binary",
        app_id: str = "headrace-export",
        isolation_level: str = "read_committed",
        commit_records: int = 500_000,
        partition_by: list[str] | None = None,
        timeout: float = 15.0,
        client: KafkaClient | None = None,
        on_commit: Callable[[Commit], None] | None = None,
        on_progress: Callable[[int, int], None] | None = None,
        schema_registry_url: str | None = None,
        client_config: dict[str, str] | None = None,
        storage_options: dict[str, str] | None = None,
    ) -> None:
        if value_format not in VALUE_FORMATS:
            raise OptionError(f"value format must be one of {VALUE_FORMATS}")
        self._registry_decoder: Any = None
        if value_format not in ("binary", "json"):
            if not schema_registry_url:
                raise OptionError(f"value format {value_format} needs a schema registry URL")
            from headrace.schema_registry._generic import RegistryDecoder

            # Avro values read as the subject's latest schema: every commit has its columns.
            reader = (
                _latest_avro(schema_registry_url, f"{topic}-value")
                if value_format == "avro"
                else None
            )
            self._registry_decoder = RegistryDecoder(
                schema_registry_url, value_format, avro_reader=reader
            )
        if commit_records <= 0:
            raise OptionError("commit_records must be positive")
        if timeout <= 0:
            raise OptionError("timeout must be positive")
        self.topic = topic
        self.starting = parse_offset_spec(starting, option="--from")
        self.value_format = value_format
        self.commit_records = commit_records
        # None: delta-rs reads the store's settings (AWS_ENDPOINT_URL, ...) from the
        # environment, as the ``headrace spark export`` command relies on.
        self.sink = DeltaSink(
            delta_path, app_id=app_id, partition_by=partition_by, storage_options=storage_options
        )
        self._own_client = client is None
        self.client: KafkaClient = client or ConfluentClient(
            bootstrap, isolation_level=isolation_level, timeout=timeout, extra=client_config
        )
        self.on_commit = on_commit
        self.on_progress = on_progress
        self.state = ExportState.CREATED
        self._value_schema: Any = None

    def _move(self, to: ExportState) -> None:
        check_transition(_TRANSITIONS, self.state, to, "export", SparkBridgeError)
        self.state = to

    def plan(self) -> tuple[list[OffsetRange], dict[TopicPartition, int]]:
        bounds = self.client.bounds(
            self.client.partitions(Subscription(topics=(self.topic,)), missing_ok=False)
        )
        recorded = self.sink.committed_offsets(bounds)
        fresh = {tp: b for tp, b in bounds.items() if tp not in recorded}
        starting = self.starting
        if not isinstance(starting, str):
            # Check named partitions against the topic, then let the table's record win
            # for partitions it already covers (a rerun with the same --from resumes).
            resolve(starting, bounds, option="--from")
            starting = {tp: o for tp, o in starting.items() if tp in fresh}
        start = {**resolve(starting, fresh, option="--from"), **recorded}
        return plan_ranges(start, {tp: b.latest for tp, b in bounds.items()}), recorded

    def run(self) -> ExportResult:
        began = time.perf_counter()
        result = ExportResult()
        try:
            result.ranges, result.resumed_from = self.plan()
            self._move(ExportState.PLANNED)
            if result.ranges:
                self._move(ExportState.COPYING)
                self._copy(result)
            self._move(ExportState.FINISHED)
        except BaseException:
            self._move(ExportState.FAILED)
            raise
        finally:
            if self._own_client:
                self.client.close()
            result.seconds = time.perf_counter() - began
        return result

    def _copy(self, result: ExportResult) -> None:
        pa = require("pyarrow")
        schema = record_schema(False)
        buffered: list[Any] = []
        ends: dict[TopicPartition, int] = {}
        rows = 0
        for cols in self.client.read(
            result.ranges, chunk=min(self.commit_records, 50_000), with_headers=False
        ):
            buffered.append(to_record_batch(cols, schema))
            ends.update({TopicPartition(cols.topic, p): e for p, e in cols.ends().items()})
            rows += len(cols)
            if self.on_progress is not None:
                self.on_progress(len(cols), result.planned)
            if rows >= self.commit_records:
                self._commit(pa.Table.from_batches(buffered, schema), ends, result)
                buffered, ends, rows = [], {}, 0
        if buffered:
            self._commit(pa.Table.from_batches(buffered, schema), ends, result)

    def _commit(self, records: Any, ends: dict[TopicPartition, int], result: ExportResult) -> None:
        table = self._shape(records)
        written = self.sink.append_records(table, ends)
        result.records += written
        result.commits += 1
        if self.on_commit is not None:
            self.on_commit(Commit(written, dict(ends)))

    def _shape(self, records: Any) -> Any:
        """The rows as stored: Kafka columns, or the JSON fields beside the metadata."""
        if self.value_format == "binary":
            return records
        from ._json import json_values_to_arrow
        from ._registry_values import registry_values_to_arrow

        if self._value_schema is None:
            self._value_schema = self._existing_value_schema()
        try:
            if self._registry_decoder is not None:
                fields = registry_values_to_arrow(
                    records["value"], self._registry_decoder, self._value_schema
                )
            else:
                fields = json_values_to_arrow(records["value"], self._value_schema)
        except DecodeError as exc:
            if exc.row is None:
                raise
            where = (
                f"{records['topic'][exc.row]} partition {records['partition'][exc.row]}"
                f" offset {records['offset'][exc.row]}"
            )
            raise DecodeError(f"{where}: {exc}", row=exc.row) from None
        self._value_schema = fields.schema
        meta = records.drop_columns(["value"])
        clash = set(fields.column_names) & set(meta.column_names)
        if clash:
            raise OptionError(f"value fields {sorted(clash)} clash with record columns")
        for name in fields.column_names:
            meta = meta.append_column(fields.schema.field(name), fields[name])
        return meta

    def _existing_value_schema(self) -> Any:
        table = self.sink.table()
        if table is None:
            return None
        pa = require("pyarrow")
        stored = pa.schema(table.schema().to_arrow())
        record_cols = set(record_schema(False).names)
        return pa.schema([f for f in stored if f.name not in record_cols])


def _latest_avro(registry_url: str, subject: str) -> str | None:
    """The subject's latest Avro schema text, or None when the subject has none yet."""
    import urllib.parse

    from headrace.schema_registry import RegistryClient, SchemaRegistryError

    quoted = urllib.parse.quote(subject, safe="")
    try:
        latest = RegistryClient(registry_url).request("GET", f"/subjects/{quoted}/versions/latest")
    except SchemaRegistryError as exc:
        if exc.error_code in (40401, 40402):
            return None
        raise
    return str(latest["schema"]) if latest.get("schemaType", "AVRO") == "AVRO" else None


def export_topic(bootstrap: str, topic: str, delta_path: str, **options: Any) -> ExportResult:
    """Run one ``ExportJob``; see it for the options and the order of steps."""
    return ExportJob(bootstrap, topic, delta_path, **options).run()
