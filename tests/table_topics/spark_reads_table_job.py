"""Spark reading table topics' Delta tables both ways, run by ``test_spark_reads_table.py``
in .venv-delta-spark (pyspark 4.2.0 with delta-spark 4.4.0)::

    python spark_reads_table_job.py JARS_DIR OUT_JSON NAME=TABLE_PATH...

In one session with delta-spark, each table is read with ``format("delta")`` and with
``read_delta`` (delta-rs picks the snapshot's files, Spark reads them); the rows go to
OUT_JSON as ``{NAME: {"delta_spark": [...], "delta_rs": [...]}}``, every row with its
binary columns in hex and its timestamp in epoch milliseconds, so the test compares
values rather than how each side prints them.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from headrace.spark_bridge import delta_spark_session, read_delta

# The record's columns, each turned into something JSON keeps exactly.
ROW = """
    hex(key) AS key,
    partition,
    offset,
    unix_millis(timestamp) AS timestamp_ms,
    transform(headers, h -> named_struct('key', h.key, 'value', hex(h.value))) AS headers,
    hex(value) AS value
"""


def rows(spark: Any, frame: Any, view: str) -> list[dict[str, Any]]:
    frame.createOrReplaceTempView(view)
    found = spark.sql(f"SELECT {ROW} FROM {view} ORDER BY partition, offset").collect()
    return [row.asDict(recursive=True) for row in found]


def main(jars: str, out: str, tables: list[str]) -> None:
    spark = delta_spark_session("table-topic-read", jars=jars)
    spark.sparkContext.setLogLevel("ERROR")
    answers: dict[str, dict[str, list[dict[str, Any]]]] = {}
    try:
        for name, path in (table.split("=", 1) for table in tables):
            answers[name] = {
                "delta_spark": rows(spark, spark.read.format("delta").load(path), "by_spark"),
                "delta_rs": rows(spark, read_delta(spark, path), "by_delta_rs"),
            }
    finally:
        spark.stop()
    with open(out, "w") as f:
        json.dump(answers, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
