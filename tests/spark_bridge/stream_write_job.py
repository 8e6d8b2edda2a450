"""A streaming query that copies text files into a topic through ``format("headrace")``.

Run by ``test_spark_write.py`` in a process group of its own, so the test can SIGKILL the
whole driver (Python, the JVM and its Python workers) mid-run and start it again on the
same checkpoint. Usage::

    python stream_write_job.py BOOTSTRAP TOPIC INPUT_DIR CHECKPOINT_DIR

One file per micro-batch (``maxFilesPerTrigger``), each cut into several Spark
partitions (a small ``maxPartitionBytes``), so a batch runs several writing tasks. The
query runs until every file is written (``Trigger.AvailableNow``), then prints ``done``.
"""

from __future__ import annotations

import sys

from headrace.spark_bridge import spark_session


def main(bootstrap: str, topic: str, input_dir: str, checkpoint: str) -> None:
    spark = spark_session(
        "headrace-stream-write",
        conf={
            "spark.sql.files.maxPartitionBytes": "16k",
            "spark.sql.files.openCostInBytes": "1k",
            "spark.sql.shuffle.partitions": "2",
        },
    )
    spark.sparkContext.setLogLevel("ERROR")
    lines = spark.readStream.format("text").option("maxFilesPerTrigger", "1").load(input_dir)
    query = (
        lines.selectExpr("value AS key", "value")
        .writeStream.format("headrace")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    for progress in query.recentProgress:  # for a reader of a failed test's output
        print(progress["batchId"], progress["numInputRows"], progress["durationMs"], flush=True)
    print("done", flush=True)
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:5])
