"""The demo's last stage through a table topic (``headrace demo --report-from table``):
the per-minute counts topic is a table, so there is no export job to run.

1. Before any count is produced, set the topic's ``headrace.table.mode=key_value`` (and a
   short commit interval) with IncrementalAlterConfigs; the table writer (the demo's
   own, beside its built-in broker, or that of the broker given, which must run with the
   ``--table-location`` the demo is told) keeps ``<location>/<topic>`` from then on.
2. Wait until the table holds every count of this run: the rows at or after the offsets
   the topic stood at when the run began (so a shared broker's older data stays out).
3. Read the table into a local Spark session, decode the JSON values into the view the
   export path has (page, minute, views) and run the same report (``_handoff``).

Blocking (Spark and delta-rs are synchronous): the demo runs steps 2 and 3 in a worker
thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from ._handoff import spark_report

TABLE_CONFIGS = {
    "headrace.table.mode": "key_value",
    "headrace.table.commit.interval.ms": "500",
}
TABLE_WAIT_S = 60.0  # the table has this long to hold every count after the last one
DISCOVERY_S = 0.5  # the demo's own writer looks for table topics this often

# The view the export path registers, made from the key_value table's JSON values.
VIEW = """
    CREATE OR REPLACE TEMP VIEW page_views_per_minute AS
    SELECT get_json_object(json, '$.page')                 AS page,
           get_json_object(json, '$.minute')               AS minute,
           CAST(get_json_object(json, '$.views') AS BIGINT) AS views
    FROM (SELECT CAST(value AS STRING) AS json FROM page_views_table WHERE {this_run})
"""


def make_table_topic(bootstrap: str, topic: str) -> None:
    """Step 1: turn ``topic`` into a key_value table topic."""
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
    )

    resource = ConfigResource(
        ConfigResource.Type.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
            for name, value in TABLE_CONFIGS.items()
        ],
    )
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.incremental_alter_configs([resource])[resource].result(timeout=30)


@contextmanager
def table_writer(bootstrap: str, location: str) -> Iterator[None]:
    """The table writer beside the demo's built-in broker, as ``headrace broker
    --table-location`` runs it, for the ``with`` block."""
    from headrace.table_topics import TableWriter

    writer = TableWriter(bootstrap, location, discovery_interval_s=DISCOVERY_S)
    thread = threading.Thread(target=writer.run, name="demo-table-writer", daemon=True)
    thread.start()
    try:
        yield
    finally:
        writer.stop()
        thread.join(30)


def table_hand_off(
    topic: str,
    start_offsets: Mapping[int, int],
    location: str,
    expected: Mapping[tuple[str, str], int],
) -> bool:
    """Steps 2 and 3; True when the table holds the run's counts and Spark's totals equal
    ``expected`` per page."""
    try:
        from headrace.spark_bridge import register_delta_tables
        from headrace.table_topics import table_path
    except ImportError as exc:  # the spark extra is optional for the rest of headrace
        print(f"[spark]    skipped: {exc} (install headrace[spark])")
        return False
    path = table_path(location, topic)
    rows = _wait_for_rows(path, start_offsets, len(expected))
    print(f"[table]    {rows} per-minute counts of this run in the table topic's table {path}")
    if rows != len(expected):
        print(f"[table]    expected {len(expected)} within {TABLE_WAIT_S:.0f} s")
        return False
    this_run = " OR ".join(
        f"(partition = {p} AND offset >= {o})" for p, o in sorted(start_offsets.items())
    )

    def register(spark: Any) -> None:
        register_delta_tables(spark, {"page_views_table": path})
        spark.sql(VIEW.format(this_run=this_run or "true"))

    return spark_report(register, expected)


def _wait_for_rows(path: str, start_offsets: Mapping[int, int], wanted: int) -> int:
    """The rows of this run in the table at ``path``, once there are ``wanted`` of them
    or ``TABLE_WAIT_S`` has passed."""
    deadline = time.monotonic() + TABLE_WAIT_S
    while True:
        rows = _rows_of_this_run(path, start_offsets)
        if rows >= wanted or time.monotonic() > deadline:
            return rows
        time.sleep(0.2)


def _rows_of_this_run(path: str, start_offsets: Mapping[int, int]) -> int:
    import deltalake

    try:
        table = deltalake.DeltaTable(path)
    except deltalake.exceptions.TableNotFoundError:
        return 0
    read = table.to_pyarrow_table(columns=["partition", "offset"]).to_pylist()
    return sum(1 for r in read if r["offset"] >= start_offsets.get(r["partition"], 0))
