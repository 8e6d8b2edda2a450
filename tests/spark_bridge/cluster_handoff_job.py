"""The hand-off as a Spark job on a cluster: a topic into a Delta table, exactly once.

A user's job, submitted with headrace shipped beside it rather than installed on the
cluster's machines::

    spark-submit --master spark://HOST:7077 --py-files headrace.zip \\
        cluster_handoff_job.py BOOTSTRAP TOPIC DELTA_PATH REPORT_JSON

In order:
  1. read the whole topic with ``format("headrace")``: the executors fetch the records,
     one Spark partition per topic-partition;
  2. append the rows with ``DeltaSink.append_records``, the hand-off's own writer: one
     Delta commit that records, per partition, the next offset to read (the app id
     ``headrace-export``, as ``headrace spark export`` records them). Rows below what the
     table recorded are dropped, so a rerun of the job writes nothing twice, and
     ``headrace spark export`` later goes on from where this job stopped.

Between the two steps every Arrow batch the executors read passes through
``_note_where_read``, which counts it under the executor's working directory and the file
headrace was imported from there; the counts go to REPORT_JSON with what was written. That
is the only part of this file a user would not write: it lets the test see where the
records were read and which headrace read them.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.types import StringType, StructField, StructType

from headrace.spark_bridge import DeltaSink, register_source

APP_ID = "headrace-export"  # the CLI export's default: either may carry the table on
_READ_BY = ("read_in", "headrace_from", "python")  # the report's columns, dropped before writing


def _note_where_read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The batches unchanged, each with the executor's working directory (standalone
    workers run each executor in ``WORK_DIR/APP_ID/EXECUTOR_ID``), the headrace module
    this Python worker imported, and the interpreter running it."""
    import os

    import headrace  # as the data source just did, in this executor's Python

    where = (os.getcwd(), os.path.abspath(headrace.__file__ or ""), sys.executable)
    for batch in batches:
        columns = [pa.repeat(pa.scalar(value, pa.string()), batch.num_rows) for value in where]
        yield pa.RecordBatch.from_arrays(
            [*batch.columns, *columns], names=[*batch.schema.names, *_READ_BY]
        )


def main(bootstrap: str, topic: str, delta_path: str, report_path: str) -> None:
    spark = SparkSession.builder.appName("headrace-cluster-handoff").getOrCreate()
    try:
        register_source(spark)  # the source is shipped, not installed: Spark cannot find it
        records = (
            spark.read.format("headrace")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .load()
        )
        noted = StructType(
            [*records.schema.fields, *(StructField(name, StringType()) for name in _READ_BY)]
        )
        read = records.mapInArrow(_note_where_read, noted).toArrow()
        sink = DeltaSink(delta_path, app_id=APP_ID)
        written = sink.append_records(read.drop_columns(list(_READ_BY)))
        where = read.group_by(list(_READ_BY)).aggregate([("offset", "count")])
        report: dict[str, Any] = {
            "master": spark.sparkContext.master,
            "read": read.num_rows,
            "written": written,
            "spark_partitions": records.rdd.getNumPartitions(),
            "read_by": [
                {"read_in": d, "headrace_from": h, "python": p, "records": n}
                for d, h, p, n in zip(
                    *(where[c].to_pylist() for c in (*_READ_BY, "offset_count")), strict=True
                )
            ],
            "driver_headrace_from": sys.modules["headrace"].__file__,
            "driver_python": sys.executable,
        }
    finally:
        spark.stop()
    with open(report_path, "w") as out:
        json.dump(report, out)


if __name__ == "__main__":
    main(*sys.argv[1:5])
