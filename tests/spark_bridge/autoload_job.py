"""A Spark program as a user writes it: no headrace import, no registration call.

Run by ``test_spark_autoload.py`` in a process of its own, so that process's JVM starts
under the master and environment the test gives it, and nothing earlier in the process
(another test's ``spark_session()``, which registers the source) can have made
``format("headrace")`` known. Usage::

    python autoload_job.py MASTER BOOTSTRAP TOPIC CHECKPOINT_DIR

Prints one JSON object on its last line of stdout: the master, the executors that came
up, the rows of a batch read and of a streaming read (AvailableNow into the memory
sink), and the headrace modules the driver process itself imported. Then it calls
``register_source`` as older code does, and reads again.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from pyspark.sql import SparkSession

EXECUTORS_WITHIN = 60.0  # seconds for the cluster's executors to register


def _rows(frame: Any) -> list[list[Any]]:
    return sorted(
        [r.partition, r.offset, bytes(r.key).decode(), bytes(r.value).decode()]
        for r in frame.select("partition", "offset", "key", "value").collect()
    )


def _executors(spark: Any, want: int) -> list[str]:
    """The executor ids once ``want`` have registered (or what came up by the deadline)."""
    deadline = time.monotonic() + EXECUTORS_WITHIN
    while True:
        ids = sorted(
            filter(None, spark.sparkContext._jsc.sc().getExecutorIds().mkString(",").split(","))
        )
        if len(ids) >= want or time.monotonic() > deadline:
            return ids
        time.sleep(0.2)


def main(master: str, bootstrap: str, topic: str, checkpoint: str) -> dict[str, Any]:
    spark = (
        SparkSession.builder.master(master)
        .appName("headrace-autoload")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    try:
        spark.sparkContext.setLogLevel("ERROR")
        executors = _executors(spark, 2)
        batch = (
            spark.read.format("headrace")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .load()
        )
        stream = (
            spark.readStream.format("headrace")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", "40")
            .load()
        )
        query = (
            stream.writeStream.format("memory")
            .queryName("autoload_stream")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(120)
        report = {
            "master": spark.sparkContext.master,
            "executors": executors,
            "batch": _rows(batch),
            "batch_partitions": batch.rdd.getNumPartitions(),
            "stream": _rows(spark.table("autoload_stream")),
            "stream_batches": len(query.recentProgress),
            "driver_imported": sorted(
                m for m in sys.modules if m.split(".")[0] in ("headrace", "pyspark_headrace")
            ),
        }
        # Registering on top of what Spark found: no warning (the log shows WARN again),
        # and the source still reads.
        spark.sparkContext.setLogLevel("WARN")
        from headrace.spark_bridge import register_source

        register_source(spark)
        report["batch_after_register"] = _rows(batch)
        return report
    finally:
        spark.stop()


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:5])))
