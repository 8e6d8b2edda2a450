"""The ``headrace`` PySpark data source: topics read through the Kafka protocol.

    spark.dataSource.register(HeadraceDataSource)
    spark.read.format("headrace").option("kafka.bootstrap.servers", b)
         .option("subscribe", "orders").load()

Planning (partitions, offsets) runs on the driver, as Spark's own Kafka source plans:
a Spark partition per topic-partition, large ones cut when ``minPartitions`` asks for
more (``_range_split.py``); ``maxPartitions``, this source's own, packs the ranges into
that many instead (``_packing.py``). Each Spark partition reads its ranges in a worker
through one consumer and returns Arrow batches. This module
imports pyspark at import time, so the package imports it only when asked to.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)

# Spark >= 4.2: admission control (maxOffsetsPerTrigger) and Trigger.AvailableNow.
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from ._arrow import record_schema, spark_ddl, to_record_batch
from ._errors import OptionError
from ._kafka import STALL_TIMEOUT, ConfluentClient
from ._offsets import (
    Bounds,
    OffsetRange,
    TopicPartition,
    cap_offsets,
    from_json_offsets,
    plan_ranges,
    resolve,
    to_json_offsets,
)
from ._options import Position, SourceOptions, parse_options
from ._packing import pack_ranges
from ._range_split import split_ranges
from ._registry_values import ValueColumns
from ._timestamps import TimestampSpec, resolve_times

_CHUNK = 100_000  # records per Arrow batch handed to Spark


class RangePartition(InputPartition):
    """One Spark partition: offset ranges of any topic-partitions, read by one consumer."""

    def __init__(self, ranges: Sequence[OffsetRange]) -> None:
        super().__init__(tuple(ranges))
        self.ranges = tuple(ranges)


def _spark_partitions(
    options: SourceOptions, ranges: list[OffsetRange], *, keep_empty: bool = False
) -> list[RangePartition]:
    """Spark's plan, or this source's packing under ``maxPartitions``.

    ``keep_empty``: a batch read whose ranges are not cut keeps a partition for each
    topic-partition, empty or not, as Spark's batch plan does.
    """
    if options.max_partitions is not None:
        groups = pack_ranges(ranges, options.max_partitions)
    elif options.min_partitions is not None and options.min_partitions > len(ranges):
        groups = [[r] for r in split_ranges(ranges, options.min_partitions)]
    else:
        groups = [[r] for r in ranges if keep_empty or r.size > 0]
    # Spark wants at least one partition; an empty one reads nothing.
    return [RangePartition(g) for g in groups] or [RangePartition(())]


def _client(options: SourceOptions) -> ConfluentClient:
    ms = options.poll_timeout_ms
    return ConfluentClient(
        options.bootstrap_servers,
        isolation_level=options.isolation_level,
        extra=options.client_config,
        stall_timeout=STALL_TIMEOUT if ms is None else ms / 1000,
    )


def _resolve(
    client: ConfluentClient,
    position: Position,
    bounds: dict[TopicPartition, Bounds],
    *,
    starting: bool,
    fail_on_data_loss: bool = True,
) -> dict[TopicPartition, int]:
    """Concrete offsets of one end of a read, from offsets or from timestamps."""
    if isinstance(position, TimestampSpec):
        found = client.offsets_for_times(position.times(sorted(bounds)))
        return resolve_times(position, found, bounds, starting=starting)
    option = "startingOffsets" if starting else "endingOffsets"
    missing = sorted(set(bounds) - set(position)) if isinstance(position, dict) else []
    if missing:  # Spark's source asks for every partition, where the export's --from does not
        raise OptionError(
            f"{option} must name every partition read (-2 for earliest, -1 for latest):"
            f" missing {[f'{tp.topic}/{tp.partition}' for tp in missing]}"
        )
    return resolve(position, bounds, option=option, fail_on_data_loss=fail_on_data_loss)


def _read(
    options: SourceOptions, partition: InputPartition, values: ValueColumns | None = None
) -> Iterator[Any]:
    assert isinstance(partition, RangePartition)
    if not partition.ranges:
        return
    schema = record_schema(options.include_headers)
    by_topic: dict[str, list[OffsetRange]] = {}
    for r in partition.ranges:
        by_topic.setdefault(r.topic, []).append(r)
    with _client(options) as client:
        for ranges in by_topic.values():
            for cols in client.read(ranges, chunk=_CHUNK, with_headers=options.include_headers):
                batch = to_record_batch(cols, schema)
                yield batch if values is None else values.decode(batch)


def _value_columns(options: SourceOptions) -> ValueColumns | None:
    if options.value_format == "binary":
        return None
    assert options.schema_registry_url and options.value_subject  # parse_options checks
    return ValueColumns(options.schema_registry_url, options.value_subject)


class HeadraceDataSource(DataSource):
    """Spark's Kafka source options and columns, served by any Kafka-protocol broker."""

    @classmethod
    def name(cls) -> str:
        return "headrace"

    def schema(self) -> str | StructType:
        options = {k.lower(): str(v) for k, v in self.options.items()}
        headers = (options.get("includeheaders") or "false").strip().lower() == "true"
        if options.get("value.format", "binary").lower() == "binary":
            return spark_ddl(headers)
        values = _value_columns(parse_options(self.options, streaming=False))
        assert values is not None
        spark_schema: StructType = values.spark_schema(record_schema(headers))
        return spark_schema

    def reader(self, schema: StructType) -> DataSourceReader:
        return BatchReader(parse_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return StreamReader(parse_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from ._sink import batch_writer  # writes are planned in their own module

        return batch_writer(schema, dict(self.options), overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from ._sink import stream_writer

        return stream_writer(schema, dict(self.options))


class BatchReader(DataSourceReader):
    """A bounded read: startingOffsets..endingOffsets, resolved once on the driver."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.values = _value_columns(options)  # planned once, on the driver

    def partitions(self) -> Sequence[InputPartition]:
        o = self.options
        with _client(o) as client:
            bounds = client.bounds(client.partitions(o.subscription, missing_ok=False))
            start = _resolve(
                client, o.starting, bounds, starting=True, fail_on_data_loss=o.fail_on_data_loss
            )
            end = _resolve(client, o.ending, bounds, starting=False)
        return _spark_partitions(o, plan_ranges(start, end, keep_empty=True), keep_empty=True)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return _read(self.options, partition, self.values)


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches over the offsets Spark checkpoints.

    Offsets are Spark's Kafka JSON (``{"topic": {"0": 42}}``, next offset to read). Spark
    writes each batch's end to its offset log before running it, so a restarted query
    re-plans exactly the same ranges. Partitions that appear later start at earliest.
    """

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.values = _value_columns(options)
        self._client: ConfluentClient | None = None
        self._available_now: dict[TopicPartition, int] | None = None

    def _c(self) -> ConfluentClient:
        if self._client is None:
            self._client = _client(self.options)
        return self._client

    def _latest(self) -> dict[TopicPartition, int]:
        client = self._c()
        bounds = client.bounds(client.partitions(self.options.subscription, missing_ok=True))
        return {tp: b.latest for tp, b in bounds.items()}

    def initialOffset(self) -> dict[str, Any]:
        client = self._c()
        bounds = client.bounds(client.partitions(self.options.subscription, missing_ok=True))
        start = _resolve(
            client,
            self.options.starting,
            bounds,
            starting=True,
            fail_on_data_loss=self.options.fail_on_data_loss,
        )
        return to_json_offsets(start)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger is None:
            return ReadAllAvailable()
        return ReadMaxRows(self.options.max_offsets_per_trigger)

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = self._latest()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        """The end of the next batch: latest offsets, capped by ``limit`` and AvailableNow."""
        begin = from_json_offsets(start)
        latest = self._latest()
        if self._available_now is not None:  # never past what existed when it began
            latest = {tp: min(o, self._available_now.get(tp, 0)) for tp, o in latest.items()}
        latest = {tp: max(o, begin.get(tp, 0)) for tp, o in latest.items()}
        if isinstance(limit, ReadMaxRows):
            latest = cap_offsets(begin, latest, limit.max_rows)
        # A partition missing from this metadata answer keeps its offset.
        return to_json_offsets({**begin, **latest})

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        ranges = plan_ranges(from_json_offsets(start), from_json_offsets(end))
        return _spark_partitions(self.options, ranges)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return _read(self.options, partition, self.values)

    def commit(self, end: dict[str, Any]) -> None:
        # Nothing to tell the broker: Spark's checkpoint, not a consumer group, owns progress.
        return None

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def register(spark: Any) -> None:
    """Make ``format("headrace")`` available in ``spark``.

    Where Spark already found it on its own (the ``pyspark_headrace`` module), registering
    again changes nothing but makes Spark warn that a session's source replaced a static
    one, so it is skipped.
    """
    if not _known(spark):
        spark.dataSource.register(HeadraceDataSource)


def _known(spark: Any) -> bool:
    """Whether the session already resolves ``headrace`` (found statically or registered)."""
    from py4j.protocol import Py4JError

    try:
        manager = spark._jsparkSession.sessionState().dataSourceManager()
        return bool(manager.dataSourceExists(HeadraceDataSource.name()))
    except (AttributeError, Py4JError):  # Spark Connect: no JVM here; registering is safe
        return False
