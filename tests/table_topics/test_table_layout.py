"""Where a topic's table lives and what its commits record, as every writer stores it and
the console reads it.

The stored form is pinned to the byte: tables already written must read the same, and
the console, the writer's resume and Spark users read these keys. The three writers (the
export's ``DeltaSink``, an appended table topic, an upserted one) record offsets alike.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa

from headrace.base.table_layout import (
    TABLE_APP_ID,
    incarnation_app_id,
    offsets_app_id,
    table_path,
)
from headrace.console._table_lag import table_lag
from headrace.spark_bridge._delta import DeltaSink
from headrace.spark_bridge._offsets import TopicPartition
from headrace.table_topics._records import TopicRecord
from headrace.table_topics._rows import key_value_rows
from headrace.table_topics._table_commit import TableCommits
from headrace.table_topics._upsert import upsert

TOPIC_ID = "KaLJ402eR0qnsjJbWrLfMA"
WRITER_APP_ID = "headrace.table.KaLJ402eR0qnsjJbWrLfMA"


def rows(*records: tuple[int, int]) -> pa.Table:
    """key_value rows of (partition, offset), each with a key and a value."""
    made = [TopicRecord(p, o, 1_700_000_000_000 + o, b"k%d" % o, b"v", []) for p, o in records]
    return key_value_rows(made)


def last_commit(path: str) -> tuple[list[tuple[str, int]], str]:
    """The newest commit's application transactions in log order, and its offsets entry."""
    log = sorted((Path(path) / "_delta_log").glob("*.json"))[-1]
    actions: list[dict[str, Any]] = [json.loads(line) for line in log.read_text().splitlines()]
    txns = [(a["txn"]["appId"], a["txn"]["version"]) for a in actions if "txn" in a]
    [info] = [a["commitInfo"] for a in actions if "commitInfo" in a]
    return txns, info["headrace.offsets"]


def test_the_layout_of_a_topics_table() -> None:
    assert table_path("s3://lake/tables/", "orders") == "s3://lake/tables/orders"
    assert table_path("/data/lake", "orders") == "/data/lake/orders"
    assert TABLE_APP_ID == "headrace.table"
    assert incarnation_app_id(TABLE_APP_ID, TOPIC_ID) == WRITER_APP_ID
    assert incarnation_app_id(TABLE_APP_ID, "") == TABLE_APP_ID
    assert offsets_app_id(WRITER_APP_ID, "orders", 2) == f"{WRITER_APP_ID}/orders/2"


def test_an_appended_table_records_its_offsets_under_both_app_ids(tmp_path: Path) -> None:
    path = table_path(str(tmp_path), "orders")
    commits = TableCommits(
        path, "orders", app_id=WRITER_APP_ID, partition_by=None, storage_options=None
    )
    commits.append(rows((1, 6), (0, 2)), {1: 7, 0: 3}, merge_schema=False)
    assert last_commit(path) == (
        [
            (f"{WRITER_APP_ID}/orders/0", 3),
            (f"{WRITER_APP_ID}/orders/1", 7),
            ("headrace.table/orders/0", 3),
            ("headrace.table/orders/1", 7),
        ],
        '{"orders/0": 3, "orders/1": 7}',
    )
    assert commits.committed_offsets(3) == {0: 3, 1: 7}


def test_without_a_topic_id_an_appended_table_records_one_app_id(tmp_path: Path) -> None:
    path = table_path(str(tmp_path), "orders")
    commits = TableCommits(path, "orders", partition_by=None, storage_options=None)
    commits.append(rows((0, 0)), {0: 1}, merge_schema=False)
    assert last_commit(path) == ([("headrace.table/orders/0", 1)], '{"orders/0": 1}')


def test_an_upserted_table_records_its_offsets_as_an_appended_one(tmp_path: Path) -> None:
    path = table_path(str(tmp_path), "prices")
    upsert(
        path, rows((1, 4), (0, 9)), {0: 10, 1: 5}, app_id=WRITER_APP_ID, also_app_id=TABLE_APP_ID
    )
    assert last_commit(path) == (
        [
            (f"{WRITER_APP_ID}/prices/0", 10),
            (f"{WRITER_APP_ID}/prices/1", 5),
            ("headrace.table/prices/0", 10),
            ("headrace.table/prices/1", 5),
        ],
        '{"prices/0": 10, "prices/1": 5}',
    )
    # the MERGE's commit records them the same way
    upsert(path, rows((0, 10)), {0: 11}, app_id=WRITER_APP_ID, also_app_id=TABLE_APP_ID)
    assert last_commit(path) == (
        [(f"{WRITER_APP_ID}/prices/0", 11), ("headrace.table/prices/0", 11)],
        '{"prices/0": 11}',
    )


def test_the_export_records_its_offsets_in_the_same_form(tmp_path: Path) -> None:
    path = str(tmp_path / "export")
    data = pa.table(
        {
            "topic": ["b", "a", "a"],
            "partition": pa.array([0, 1, 0], pa.int32()),
            "offset": pa.array([4, 8, 2], pa.int64()),
        }
    )
    DeltaSink(path, app_id="job").append_records(data, {TopicPartition("a", 0): 6})
    assert last_commit(path) == (
        [("job/a/0", 6), ("job/a/1", 9), ("job/b/0", 5)],
        '{"a/0": 6, "a/1": 9, "b/0": 5}',
    )


def test_the_console_reads_the_lag_of_a_table_the_writer_wrote(tmp_path: Path) -> None:
    location = str(tmp_path)
    commits = TableCommits(
        table_path(location, "orders"),
        "orders",
        app_id=WRITER_APP_ID,
        partition_by=None,
        storage_options=None,
    )
    commits.append(rows((0, 2), (1, 6)), {0: 3, 1: 7}, merge_schema=False)
    lag = table_lag(location, "orders", "key_value", {0: 5, 1: 7, 2: 4})
    # partition 0 is 2 behind, partition 2 (never committed) all of its 4
    assert (lag.records_behind, lag.error) == (6, None)
    assert lag.last_commit_ms is not None
