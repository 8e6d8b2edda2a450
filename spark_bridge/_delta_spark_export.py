"""The hand-off through delta-spark: a Structured Streaming job from a topic to a Delta table.

``headrace spark export --engine delta-spark`` runs this; the default engine,
``ExportJob`` (delta-rs), needs no JVM jars and writes the same rows: Spark's Kafka
columns (key, value, topic, partition, offset, timestamp, timestampType), unpartitioned.

Exactly once across a crash of the driver takes two records, written in this order for
each micro-batch:

1. Spark's checkpoint logs the batch's offsets (``offsets/<id>``) before it runs;
2. ``foreachBatch`` appends the rows with ``txnAppId=<app id>, txnVersion=<batch id>``:
   Delta commits the rows and the pair atomically, and skips an append whose version is
   not above the recorded one;
3. the checkpoint logs the batch as done (``commits/<id>``).

A driver killed between 2 and 3 reruns the batch from the same offsets with the same
id; step 2 then commits nothing. Killed before 2, the rerun writes it once. The job
runs until caught up (``Trigger.AvailableNow``): to the offsets that were the latest
when it started, ``commit_records`` rows per micro-batch at most, like ``ExportJob``.

The table alone is not the checkpoint here, as it is for ``ExportJob``: without the
checkpoint, batch ids would start again at 0 and every batch would be skipped. A table
that records batches of ``app_id`` with no checkpoint beside it is therefore refused.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._delta import DeltaSink
from ._delta_spark import delta_spark_session
from ._errors import OptionError

CHECKPOINTS = "_checkpoints"
"""The checkpoint's default home, ``<table>/_checkpoints/<app id>``: Delta ignores
folders whose names start with an underscore."""


@dataclass
class StreamExportResult:
    """What one run did: micro-batches run and rows read (a replayed batch counts again)."""

    batches: int
    records: int
    seconds: float


class DeltaSparkExport:
    """One run of the hand-off from ``topic`` to the table at ``delta_path`` through Spark.

    ``run()`` in order:
      1. check the checkpoint belongs with the table (see the module docstring);
      2. start a session with delta-spark's jars;
      3. stream ``format("headrace")`` from ``starting`` (where the checkpoint has no
         record) into ``foreachBatch``, each batch one idempotent Delta append;
      4. wait until the offsets that were latest at the start are written, then stop.
    """

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        delta_path: str,
        *,
        starting: str = "earliest",
        app_id: str = "headrace-export",
        isolation_level: str = "read_committed",
        commit_records: int = 500_000,
        checkpoint: str | None = None,
        client_options: Mapping[str, str] | None = None,
        jars: str | None = None,
        master: str | None = None,
    ) -> None:
        if commit_records <= 0:
            raise OptionError("commit_records must be positive")
        self.bootstrap = bootstrap
        self.topic = topic
        self.delta_path = str(delta_path)
        self.starting = starting
        self.app_id = app_id
        self.isolation_level = isolation_level
        self.commit_records = commit_records
        self.checkpoint = checkpoint or f"{self.delta_path.rstrip('/')}/{CHECKPOINTS}/{app_id}"
        self.client_options = dict(client_options or {})
        self.jars = jars
        self.master = master

    def run(self) -> StreamExportResult:
        began = time.perf_counter()
        self._check_checkpoint()
        spark = delta_spark_session(
            "headrace-export",
            master=self.master,
            jars=self.jars,
            # every batch's progress kept, to add up the rows (Spark keeps 100 by default)
            conf={"spark.sql.streaming.numRecentProgressUpdates": "100000"},
        )
        spark.sparkContext.setLogLevel("ERROR")
        reader = (
            spark.readStream.format("headrace")
            .option("kafka.bootstrap.servers", self.bootstrap)
            .option("subscribe", self.topic)
            .option("startingOffsets", self.starting)
            .option("kafka.isolation.level", self.isolation_level)
            .option("maxOffsetsPerTrigger", str(self.commit_records))
        )
        for key, value in self.client_options.items():
            reader = reader.option(f"kafka.{key}", value)
        query = (
            reader.load()
            .writeStream.foreachBatch(self._append)
            .option("checkpointLocation", self.checkpoint)
            .queryName(f"headrace-export-{self.app_id}")
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        # a run with nothing new still reports progress, with no batch added
        progress = [p for p in query.recentProgress if "addBatch" in p.durationMs]
        return StreamExportResult(
            batches=len(progress),
            records=sum(int(p.numInputRows) for p in progress),
            seconds=time.perf_counter() - began,
        )

    def _append(self, frame: Any, batch_id: int) -> None:
        """Step 2 of the module docstring: one Delta commit, skipped if ``batch_id`` is in."""
        (
            frame.write.format("delta")
            .mode("append")
            .option("txnAppId", self.app_id)
            .option("txnVersion", str(batch_id))
            .save(self.delta_path)
        )

    def _check_checkpoint(self) -> None:
        if "://" in self.checkpoint and not self.checkpoint.startswith("file:"):
            return  # a remote checkpoint: Spark reads it; nothing to look at here
        local = Path(self.checkpoint.removeprefix("file:"))
        if (local / "offsets").is_dir():
            return
        done = DeltaSink(self.delta_path, app_id=self.app_id).committed_batch()
        if done is not None:
            raise OptionError(
                f"{self.delta_path} records batches up to {done} of app id {self.app_id!r},"
                f" but its checkpoint {self.checkpoint} is missing: without it the batches"
                f" would be skipped as written. Give the checkpoint (--checkpoint) or a"
                f" new --app-id"
            )
