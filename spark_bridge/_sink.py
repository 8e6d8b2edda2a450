"""``df.write.format("headrace")`` and ``writeStream.format("headrace")``: rows into topics.

    (df.selectExpr("CAST(id AS STRING) AS key", "payload AS value")
       .write.format("headrace")
       .option("kafka.bootstrap.servers", b).option("topic", "orders").save())

Columns and options follow Spark's Kafka sink (``_sink_records.py``,
``_sink_options.py``). What each write guarantees:

- A batch write is at least once, as Spark's own: each task's producer is idempotent
  and waits for every record, so a task that succeeds wrote each of its rows once; a
  task Spark retries after a failure writes its rows again.
- A streaming write is exactly once per micro-batch, provided the query replays a
  micro-batch with the same rows in the same Spark partitions (Spark's file, rate and
  Kafka sources do, and so does this package's). Each task writes its share in one
  Kafka transaction under ``transactional.id`` ``headrace-spark-<query id>-<partition>``,
  and that transaction also commits the batch id as an offset of the consumer group of
  the same name (``MarkedTransaction``). A task of a replayed batch (Spark's driver
  died after the records were committed but before its commit log said so, or a task
  was retried after committing) fences the earlier producers of its id, finds its
  batch in the group, and writes nothing. Readers with ``isolation.level=
  read_committed`` see every row once; a micro-batch's rows appear a Spark partition
  at a time, not all at once.

This module imports pyspark; the data source's ``writer`` and ``streamWriter`` import
it only when a write is planned.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain
from typing import Any

from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from ._errors import OptionError
from ._sink_options import SinkOptions, parse_sink_options
from ._sink_producer import MarkedTransaction, RecordProducer
from ._sink_records import RecordLayout

# Spark's local properties of a micro-batch's jobs, which reach the tasks.
_BATCH_ID = "streaming.sql.batchId"
_QUERY_ID = "sql.streaming.queryId"


@dataclass
class Written(WriterCommitMessage):
    """What one task did: rows sent, or ``replayed`` when its batch was already in."""

    rows: int
    replayed: bool = False


class BatchWriter(DataSourceArrowWriter):
    """``df.write``: each task sends its rows through one idempotent producer."""

    def __init__(self, options: SinkOptions, layout: RecordLayout) -> None:
        self.options = options
        self.layout = layout

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        with RecordProducer(self.options) as producer:
            for records in self.layout.records(iterator):
                producer.send(records)
            producer.flush()
        return Written(producer.sent)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        return None  # every record was acknowledged before its task ended

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        # Records acknowledged by the tasks that finished stay in the topic: a batch
        # write to Kafka has nothing to roll back, as Spark's own sink has not.
        return None


class StreamWriter(DataSourceStreamArrowWriter):
    """``writeStream``: a marked transaction per task and micro-batch (see the module)."""

    def __init__(self, options: SinkOptions, layout: RecordLayout) -> None:
        self.options = options
        self.layout = layout

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        from pyspark import TaskContext

        context = TaskContext.get()
        batch = context.getLocalProperty(_BATCH_ID) if context else None
        query = context.getLocalProperty(_QUERY_ID) if context else None
        if context is None or batch is None or query is None:
            raise OptionError("a streaming write runs inside a micro-batch of a query")
        records = self.layout.records(iterator)
        first = next(records, None)
        if first is None:
            return Written(0)  # nothing to write, nothing to mark
        name = f"headrace-spark-{query}-{context.partitionId()}"
        # The marker sits on partition 0 of the first row's topic: a replayed batch
        # gives this task the same first row, so it looks where it wrote.
        txn = MarkedTransaction(self.options, name, name, (first.topics[0], 0))
        try:
            if txn.already_written(int(batch)):
                return Written(0, replayed=True)
            return Written(txn.write(chain([first], records), int(batch)))
        finally:
            txn.close()

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        return None  # each task committed its transaction with its marker

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        # A task that failed aborted its transaction, or left it to be fenced by the
        # next producer of its id when the batch is replayed.
        return None


def batch_writer(schema: StructType, options: dict[str, str], overwrite: bool) -> BatchWriter:
    if overwrite:
        raise OptionError(
            "save mode Overwrite is not allowed for topics: a topic is appended to"
            " (use Append or ErrorIfExists, the default, as for Spark's Kafka sink)"
        )
    parsed = parse_sink_options(options)
    return BatchWriter(parsed, RecordLayout(schema, parsed))


def stream_writer(schema: StructType, options: dict[str, str]) -> StreamWriter:
    parsed = parse_sink_options(options)
    return StreamWriter(parsed, RecordLayout(schema, parsed))
