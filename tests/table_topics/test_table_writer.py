"""The table writer beside the broker (``headrace broker --table-location``): a key_value
topic's records land in its Delta table with exact columns and values, within the commit
interval plus a commit; ``partition.by`` lays the table out by hour or by a column; the
writer says how far behind it is; a table set back to disabled stops growing."""

from __future__ import annotations

import re
import time
import urllib.request
from pathlib import Path
from typing import Any

import pyarrow as pa
from brokerproc import BrokerProcess, free_port
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
)
from deltalake import DeltaTable
from table_topic_io import (
    as_row,
    by_position,
    create_topic,
    produce,
    sample,
    table_config,
    table_rows,
)

from headrace.table_topics import TableSettings, TopicWriter

HOUR_MS = 3_600_000
# Time a commit of a small batch may take here, beyond the interval (a loaded 2-core box).
COMMIT_ALLOWANCE_S = 3.0


def test_key_value_rows_are_exact(broker: BrokerProcess, lake: Path) -> None:
    create_topic(broker.bootstrap, "exact", 3, table_config("key_value", 300))
    acked = produce(broker.bootstrap, "exact", sample(500, 3, int(time.time() * 1000) - 60_000))
    table = table_rows(lake / "exact", 500)
    assert table.schema.names == ["key", "partition", "offset", "timestamp", "headers", "value"]
    assert table.schema.field("key").type == pa.binary()
    assert table.schema.field("value").type == pa.binary()
    assert table.schema.field("partition").type == pa.int32()
    assert table.schema.field("offset").type == pa.int64()
    assert table.schema.field("timestamp").type == pa.timestamp("us", tz="UTC")
    assert by_position(table.to_pylist()) == by_position([as_row(r) for r in acked])


def test_a_record_is_queryable_within_the_interval_and_a_commit(
    broker: BrokerProcess, lake: Path
) -> None:
    interval_ms = 1000
    create_topic(broker.bootstrap, "fresh", 1, table_config("key_value", interval_ms))
    now = int(time.time() * 1000)
    produce(broker.bootstrap, "fresh", sample(1, 1, now))
    table_rows(lake / "fresh", 1)  # the writer follows the topic now
    waits = []
    for round_ in range(1, 4):
        produce(broker.bootstrap, "fresh", sample(1, 1, now))
        sent = time.monotonic()
        table_rows(lake / "fresh", 1 + round_)
        waits.append(time.monotonic() - sent)
    assert max(waits) < interval_ms / 1000 + COMMIT_ALLOWANCE_S, waits


def test_partition_by_hour_of_timestamp(broker: BrokerProcess, lake: Path) -> None:
    create_topic(
        broker.bootstrap,
        "hourly",
        2,
        table_config("key_value", 300, partition_by="hour(timestamp)"),
    )
    base = 1_790_000_000_000 // HOUR_MS * HOUR_MS  # on the hour
    # 100 records a minute apart from the half hour: 30 in one hour, 60 in the next, 10 after
    acked = produce(broker.bootstrap, "hourly", sample(100, 2, base + HOUR_MS // 2, 60_000))
    table = table_rows(lake / "hourly", 100)
    assert DeltaTable(str(lake / "hourly")).metadata().partition_columns == ["timestamp_hour"]
    rows = by_position(table.to_pylist())
    assert [{k: v for k, v in row.items() if k != "timestamp_hour"} for row in rows] == (
        by_position([as_row(r) for r in acked])
    )
    for row in rows:
        assert row["timestamp_hour"] == row["timestamp"].strftime("%Y-%m-%d-%H")
    hours = sorted({row["timestamp_hour"] for row in rows})
    assert len(hours) == 3
    assert sorted(p.name for p in (lake / "hourly").glob("timestamp_hour=*")) == [
        f"timestamp_hour={h}" for h in hours
    ]


def test_partition_by_a_column(broker: BrokerProcess, lake: Path) -> None:
    create_topic(
        broker.bootstrap,
        "by-partition",
        3,
        table_config("key_value", 300, partition_by="partition"),
    )
    acked = produce(broker.bootstrap, "by-partition", sample(60, 3, int(time.time() * 1000)))
    table = table_rows(lake / "by-partition", 60)
    assert DeltaTable(str(lake / "by-partition")).metadata().partition_columns == ["partition"]
    assert sorted(p.name for p in (lake / "by-partition").glob("partition=*")) == [
        "partition=0",
        "partition=1",
        "partition=2",
    ]
    assert by_position(table.to_pylist()) == by_position([as_row(r) for r in acked])


def test_a_table_set_back_to_disabled_stops_growing(
    broker: BrokerProcess, admin: AdminClient, lake: Path
) -> None:
    create_topic(broker.bootstrap, "switched", 1, table_config("key_value", 200))
    produce(broker.bootstrap, "switched", sample(10, 1, int(time.time() * 1000)))
    table_rows(lake / "switched", 10)
    resource = ConfigResource(
        ConfigResource.Type.TOPIC,
        "switched",
        incremental_configs=[
            ConfigEntry("headrace.table.mode", "", incremental_operation=AlterConfigOpType.DELETE)
        ],
    )
    admin.incremental_alter_configs([resource])[resource].result(15)
    time.sleep(3)  # the writer looks at the topics every 2 s
    produce(broker.bootstrap, "switched", sample(10, 1, int(time.time() * 1000)))
    time.sleep(2)
    assert DeltaTable(str(lake / "switched")).to_pyarrow_table().num_rows == 10


def set_mode(admin: AdminClient, topic: str, mode: str | None) -> None:
    """Set ``topic``'s table mode (None: delete the setting, back to disabled)."""
    operation = AlterConfigOpType.DELETE if mode is None else AlterConfigOpType.SET
    entry = ConfigEntry("headrace.table.mode", mode or "", incremental_operation=operation)
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[entry])
    admin.incremental_alter_configs([resource])[resource].result(15)


def test_a_topic_created_again_under_its_name_lands_from_its_beginning(
    broker: BrokerProcess, admin: AdminClient, lake: Path
) -> None:
    """The table's recorded offsets belong to the topic id: the new topic's records at
    offsets the old one's table had covered land too, and the old rows stay."""
    create_topic(broker.bootstrap, "reborn", 2, table_config("key_value", 200))
    old = produce(broker.bootstrap, "reborn", sample(20, 2, int(time.time() * 1000)))
    table_rows(lake / "reborn", 20)  # the table covers offsets 0-9 of each partition
    set_mode(admin, "reborn", None)
    time.sleep(3)  # the writer looks at the topics every 2 s: it has stopped
    admin.delete_topics(["reborn"])["reborn"].result(15)
    deadline = time.monotonic() + 15
    while "reborn" in admin.list_topics(timeout=10).topics:
        assert time.monotonic() < deadline, "the topic was not deleted"
        time.sleep(0.2)
    create_topic(broker.bootstrap, "reborn", 2)  # its table is enabled once the records are in
    new = [
        {**record, "value": b"new-" + (record["value"] or b"")}
        for record in sample(60, 2, int(time.time() * 1000))
    ]
    new = produce(broker.bootstrap, "reborn", new)
    assert {r["offset"] for r in new} == set(range(30))  # the old topic's offsets again
    set_mode(admin, "reborn", "key_value")
    table = table_rows(lake / "reborn", 80)
    time.sleep(1)  # nothing more comes
    rows = DeltaTable(str(lake / "reborn")).to_pyarrow_table().to_pylist()
    landed = by_position([row for row in rows if row["value"].startswith(b"new-")])
    assert landed == by_position([as_row(r) for r in new]), f"{table.num_rows} rows"
    kept = by_position([row for row in rows if not row["value"].startswith(b"new-")])
    assert kept == by_position([as_row(r) for r in old])
    # readers that know the topic by name (the console) see what the new one's table covers
    recorded = DeltaTable(str(lake / "reborn")).transaction_version
    assert [recorded(f"headrace.table/reborn/{p}") for p in range(2)] == [30, 30]


def test_freshness_says_how_far_the_table_is_behind(broker: BrokerProcess, tmp_path: Path) -> None:
    """A writer of our own beside the broker's (its table elsewhere): before it commits it
    is behind by every record; after, by none, and by the newest record's age."""
    create_topic(broker.bootstrap, "watched", 2)
    old = int(time.time() * 1000) - 30_000
    produce(broker.bootstrap, "watched", sample(40, 2, old))
    settings = TableSettings("watched", "key_value", "", 60_000, False, 2)
    writer = TopicWriter(settings, str(tmp_path), broker.bootstrap).start()
    try:
        deadline = time.monotonic() + 15
        while writer.freshness().offsets_behind != 40:
            assert time.monotonic() < deadline, writer.freshness()
            time.sleep(0.1)
        assert writer.freshness().seconds_behind is None  # nothing committed in 60 s
    finally:
        writer.stop()  # commits what it holds
    after = writer.freshness()
    assert after.offsets_behind == 0 and after.rows_committed == 40
    assert after.seconds_behind is not None
    assert 30 <= after.seconds_behind < 60
    assert DeltaTable(str(tmp_path / "watched")).to_pyarrow_table().num_rows == 40


def test_a_full_buffer_commits_before_the_interval(broker: BrokerProcess, tmp_path: Path) -> None:
    """Memory is bounded: a writer far behind commits each time it holds max_buffer_bytes
    of keys and values, not once per (here ten-minute) interval."""
    create_topic(broker.bootstrap, "bulky", 1)
    records: list[dict[str, Any]] = [
        {
            "key": None,
            "value": bytes([i % 256]) * 1000,
            "partition": 0,
            "headers": [],
            "timestamp": int(time.time() * 1000),
        }
        for i in range(2050)
    ]
    produce(broker.bootstrap, "bulky", records)
    settings = TableSettings("bulky", "key_value", "", 600_000, False, 1)
    writer = TopicWriter(
        settings, str(tmp_path), broker.bootstrap, max_buffer_bytes=100_000
    ).start()
    try:
        deadline = time.monotonic() + 30
        while writer.freshness().rows_committed < 2000:
            assert time.monotonic() < deadline, writer.freshness()
            time.sleep(0.1)
        table = DeltaTable(str(tmp_path / "bulky"))
        # 100 records (100,000 bytes) a commit: 20 commits, and 50 records still held
        assert table.to_pyarrow_table().num_rows == 2000
        assert table.version() == 19  # versions 0..19
        time.sleep(1)
        assert writer.freshness().rows_committed == 2000
    finally:
        writer.stop()
    assert DeltaTable(str(tmp_path / "bulky")).to_pyarrow_table().num_rows == 2050


def test_the_location_may_come_from_server_properties(tmp_path: Path) -> None:
    """``headrace.table.location`` in server.properties is the flag's setting; with no
    registry at all, a value_schema_latest topic is refused with the reason (logged),
    and the key_value tables beside it are kept as ever."""
    port = free_port()
    props = tmp_path / "server.properties"
    props.write_text(
        f"listeners=PLAINTEXT://127.0.0.1:{port}\n"
        f"log.dirs={tmp_path / 'data'}\n"
        f"headrace.table.location={tmp_path / 'lake'}\n"
    )
    with BrokerProcess(tmp_path / "data", port=port, config=props) as broker:
        create_topic(broker.bootstrap, "typed", 1, table_config("value_schema_latest", 100))
        create_topic(broker.bootstrap, "raw", 1, table_config("key_value", 100))
        produce(broker.bootstrap, "typed", sample(5, 1, int(time.time() * 1000)))
        produce(broker.bootstrap, "raw", sample(5, 1, int(time.time() * 1000)))
        assert table_rows(tmp_path / "lake" / "raw", 5).num_rows == 5
        deadline = time.monotonic() + 10
        while "needs a schema registry" not in (log := broker.log()):
            assert time.monotonic() < deadline, log
            time.sleep(0.1)
        assert "--table-schema-registry-url" in log
    assert not (tmp_path / "lake" / "typed").exists()


def test_the_console_serves_the_tables_freshness(tmp_path: Path) -> None:
    console = free_port()
    args = ("--table-location", str(tmp_path / "lake"), "--console-listen", f"127.0.0.1:{console}")
    with BrokerProcess(tmp_path / "data", *args) as broker:
        create_topic(broker.bootstrap, "metered", 2, table_config("key_value", 100))
        produce(broker.bootstrap, "metered", sample(30, 2, int(time.time() * 1000) - 5000))
        table_rows(tmp_path / "lake" / "metered", 30)
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{console}/metrics") as answer:
                    text = answer.read().decode()
                # the writer reports its freshness a few times a second: wait for the
                # report that follows its last commit
                if (
                    'headrace_table_offsets_behind{topic="metered"} 0' in text
                    and 'headrace_table_rows_committed_total{topic="metered"} 30' in text
                ):
                    break
            except OSError:
                text = ""  # the console is starting
            assert time.monotonic() < deadline, text[-2000:]
            time.sleep(0.2)
    assert 'headrace_table_rows_committed_total{topic="metered"} 30' in text
    behind = re.search(r'headrace_table_seconds_behind\{topic="metered"\} (\S+)', text)
    assert behind is not None and 5 <= float(behind.group(1)) < 60
    assert "kafka_server" in text or "headrace_broker" in text  # the broker's own are there
