"""The Delta sink and the export job against a broker subprocess; no Spark here.

What must hold: every produced record lands exactly once; a rerun, a repeated
batch or a job that died between commits never duplicates or skips a row.
"""

from __future__ import annotations

import json
from pathlib import Path

import deltalake
import pyarrow as pa
import pytest
from brokerproc import BrokerProcess
from kafka_clients import Confluent, unique

from headrace import cli
from headrace.spark_bridge import (
    Commit,
    DeltaSink,
    ExportJob,
    ExportState,
    OptionError,
    TopicPartition,
    export_topic,
)
from headrace.spark_bridge._arrow import record_schema
from headrace.spark_bridge._options import Subscription


def rows(path: Path) -> list[tuple[int, int]]:
    table = deltalake.DeltaTable(str(path)).to_pyarrow_table(columns=["partition", "offset"])
    return list(zip(table["partition"].to_pylist(), table["offset"].to_pylist(), strict=True))


def make_topic(bootstrap: str, n: int, partitions: int = 3) -> tuple[str, list[tuple[int, int]]]:
    topic = unique("export")
    client = Confluent()
    client.create_topic(bootstrap, topic, partitions)
    placed = client.produce(
        bootstrap,
        topic,
        [(f"k{i}".encode(), json.dumps({"n": i, "page": f"/p{i % 4}"}).encode()) for i in range(n)],
    )
    return topic, placed


def records(topic: str, spans: list[tuple[int, int, int]]) -> pa.Table:
    """Kafka-shaped rows for (partition, first offset, count) spans."""
    out = []
    for partition, first, count in spans:
        for offset in range(first, first + count):
            out.append(
                {
                    "key": b"k",
                    "value": b"v%d" % offset,
                    "topic": topic,
                    "partition": partition,
                    "offset": offset,
                    "timestamp": None,
                    "timestampType": 0,
                }
            )
    return pa.Table.from_pylist(out, schema=record_schema(False))


# ------------------------------------------------------------------------------ the sink
def test_sink_drops_rows_it_already_committed(tmp_path: Path) -> None:
    sink = DeltaSink(str(tmp_path / "t"), app_id="sink")
    assert sink.committed_offsets([TopicPartition("x", 0)]) == {}
    assert sink.append_records(records("x", [(0, 0, 10), (1, 0, 5)])) == 15
    assert sink.committed_offsets([TopicPartition("x", 0), TopicPartition("x", 1)]) == {
        TopicPartition("x", 0): 10,
        TopicPartition("x", 1): 5,
    }
    version = deltalake.DeltaTable(str(tmp_path / "t")).version()
    # The same batch again (a retried micro-batch): nothing written, no new commit.
    assert sink.append_records(records("x", [(0, 0, 10), (1, 0, 5)])) == 0
    assert deltalake.DeltaTable(str(tmp_path / "t")).version() == version
    # Overlapping: 0/5..14 and 1/5..7; only 0/10..14 and 1/5..7 are new.
    assert sink.append_records(records("x", [(0, 5, 10), (1, 5, 3)])) == 8
    got = rows(tmp_path / "t")
    assert sorted(got) == sorted({(0, o) for o in range(15)} | {(1, o) for o in range(8)})
    # Another app id keeps its own offsets in the same table.
    assert (
        DeltaSink(str(tmp_path / "t"), app_id="other").committed_offsets([TopicPartition("x", 0)])
        == {}
    )


def test_sink_explicit_ends_cover_trailing_markers(tmp_path: Path) -> None:
    sink = DeltaSink(str(tmp_path / "t"))
    sink.append_records(records("x", [(0, 0, 3)]), ends={TopicPartition("x", 0): 5})
    assert sink.committed_offsets([TopicPartition("x", 0)]) == {TopicPartition("x", 0): 5}


def test_sink_batch_ids_commit_once(tmp_path: Path) -> None:
    sink = DeltaSink(str(tmp_path / "t"), app_id="query-1")
    data = pa.table({"page": ["/a", "/b"], "views": [3, 4]})
    assert sink.committed_batch() is None
    assert sink.append_batch(data, 0) is True
    assert sink.append_batch(data, 0) is False  # retried batch 0
    assert sink.append_batch(data, 1) is True
    assert sink.committed_batch() == 1
    assert deltalake.DeltaTable(str(tmp_path / "t")).to_pyarrow_table().num_rows == 4


# ---------------------------------------------------------------------------- the export
@pytest.fixture(scope="module")
def bootstrap(broker_process: BrokerProcess) -> str:
    return broker_process.bootstrap


def test_export_copies_every_record_once_and_rerun_is_a_no_op(
    bootstrap: str, tmp_path: Path
) -> None:
    topic, placed = make_topic(bootstrap, 2000)
    path = tmp_path / "delta"
    commits: list[int] = []
    first = export_topic(
        bootstrap,
        topic,
        str(path),
        commit_records=700,
        on_commit=lambda c: commits.append(c.records),
    )
    assert first.records == 2000 and first.planned == 2000
    # A commit holds at least commit_records rows (the last one what is left); how many
    # more depends on how the fetched chunks fall, so the count of commits varies.
    assert first.commits == len(commits) >= 2 and sum(commits) == 2000
    assert all(n >= 700 for n in commits[:-1]), commits
    assert sorted(rows(path)) == sorted(placed)
    version = deltalake.DeltaTable(str(path)).version()

    again = export_topic(bootstrap, topic, str(path))
    assert (again.records, again.commits, again.ranges) == (0, 0, [])
    assert deltalake.DeltaTable(str(path)).version() == version

    more = Confluent().produce(bootstrap, topic, [(b"late", b'{"n": -1}')] * 50)
    third = export_topic(bootstrap, topic, str(path))
    assert third.records == 50 and third.commits == 1
    assert sorted(rows(path)) == sorted(placed + more)
    values = deltalake.DeltaTable(str(path)).to_pyarrow_table(columns=["value"])
    assert values["value"].to_pylist().count(b'{"n": -1}') == 50


def test_rerun_with_an_explicit_start_resumes_from_the_table(
    bootstrap: str, tmp_path: Path
) -> None:
    topic, placed = make_topic(bootstrap, 300, partitions=1)
    path = str(tmp_path / "delta")
    starting = json.dumps({topic: {"0": 100}})
    first = export_topic(bootstrap, topic, path, starting=starting)
    assert first.records == 200
    assert sorted(rows(Path(path))) == sorted(p for p in placed if p[1] >= 100)
    again = export_topic(bootstrap, topic, path, starting=starting)
    assert (again.records, again.commits) == (0, 0)
    with pytest.raises(OptionError, match="no such partition"):
        export_topic(bootstrap, topic, path, starting=json.dumps({topic: {"7": 0}}))


def test_export_that_dies_between_commits_resumes_without_gaps_or_duplicates(
    bootstrap: str, tmp_path: Path
) -> None:
    topic, placed = make_topic(bootstrap, 3000)
    path = tmp_path / "delta"
    seen: list[Commit] = []

    def crash_after_first(commit: Commit) -> None:
        seen.append(commit)
        raise KeyboardInterrupt("killed after the first commit")

    job = ExportJob(bootstrap, topic, str(path), commit_records=1000, on_commit=crash_after_first)
    with pytest.raises(KeyboardInterrupt):
        job.run()
    assert job.state is ExportState.FAILED
    assert len(seen) == 1 and 1000 <= seen[0].records < 3000
    assert len(rows(path)) == seen[0].records

    resumed = ExportJob(bootstrap, topic, str(path), commit_records=1000)
    result = resumed.run()
    assert resumed.state is ExportState.FINISHED
    assert result.resumed_from  # it started from what the table recorded
    assert result.records == 3000 - seen[0].records
    assert sorted(rows(path)) == sorted(placed)


def test_export_from_latest_skips_history(bootstrap: str, tmp_path: Path) -> None:
    topic, _ = make_topic(bootstrap, 100)
    path = tmp_path / "delta"
    assert export_topic(bootstrap, topic, str(path), starting="latest").records == 0
    # Nothing was committed, so the next run again starts from (the new) latest.
    assert not (path / "_delta_log").exists()


def test_export_json_values_become_columns(bootstrap: str, tmp_path: Path) -> None:
    topic, _ = make_topic(bootstrap, 300)
    path = tmp_path / "delta"
    export_topic(bootstrap, topic, str(path), value_format="json", commit_records=100)
    table = deltalake.DeltaTable(str(path)).to_pyarrow_table()
    assert {"n", "page", "offset", "partition"} <= set(table.column_names)
    assert "value" not in table.column_names
    assert sorted(table["n"].to_pylist()) == list(range(300))
    assert table["page"].to_pylist().count("/p1") == 75


def test_export_rejects_bad_settings(bootstrap: str, tmp_path: Path) -> None:
    with pytest.raises(OptionError):
        ExportJob(bootstrap, "t", str(tmp_path), value_format="avro")
    with pytest.raises(OptionError):
        ExportJob(bootstrap, "t", str(tmp_path), commit_records=0)


def test_export_command(bootstrap: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    topic, placed = make_topic(bootstrap, 500)
    argv = [
        "spark",
        "export",
        "--topic",
        topic,
        "--delta-path",
        str(tmp_path / "d"),
        "--bootstrap-servers",
        bootstrap,
        "--no-progress",
    ]
    assert cli.main(argv) == 0
    assert "500 records" in capsys.readouterr().out
    assert cli.main(argv) == 0
    assert "nothing new" in capsys.readouterr().out
    assert sorted(rows(tmp_path / "d")) == sorted(placed)
    assert (
        cli.main(
            [
                "spark",
                "export",
                "--topic",
                unique("missing"),
                "--delta-path",
                str(tmp_path / "e"),
                "--bootstrap-servers",
                bootstrap,
            ]
        )
        == 1
    )
    assert "does not exist" in capsys.readouterr().err


def test_read_committed_export_skips_aborted_records(bootstrap: str, tmp_path: Path) -> None:
    from confluent_kafka import Producer

    topic = unique("txn")
    Confluent().create_topic(bootstrap, topic, 1)
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": unique("tx"),
            "transaction.timeout.ms": 10_000,
        }
    )
    producer.init_transactions(10)
    for fate in ("commit", "abort", "commit"):
        producer.begin_transaction()
        for i in range(10):
            producer.produce(topic, value=f"{fate}-{i}".encode())
        producer.flush(10)  # so aborted records reach the log rather than being purged
        if fate == "commit":
            producer.commit_transaction(10)
        else:
            producer.abort_transaction(10)
    path = tmp_path / "delta"
    export_topic(bootstrap, topic, str(path))
    values = deltalake.DeltaTable(str(path)).to_pyarrow_table(columns=["value"])
    got = sorted(v.decode() for v in values["value"].to_pylist())
    assert got == sorted([f"commit-{i}" for i in range(10)] * 2)
    dirty = tmp_path / "dirty"
    export_topic(bootstrap, topic, str(dirty), isolation_level="read_uncommitted")
    assert len(rows(dirty)) == 30


# ------------------------------------------------------------------------ the Kafka client
def test_client_reads_exact_ranges_and_can_be_reused(bootstrap: str) -> None:
    from headrace.spark_bridge import OffsetRange
    from headrace.spark_bridge._kafka import ConfluentClient

    topic, placed = make_topic(bootstrap, 600)
    with ConfluentClient(bootstrap) as client:
        tps = client.partitions(Subscription(topics=(topic,)), missing_ok=False)
        assert tps == [TopicPartition(topic, p) for p in range(3)]
        bounds = client.bounds(tps)
        assert sum(b.latest for b in bounds.values()) == 600
        ranges = [OffsetRange(topic, 0, 5, 25), OffsetRange(topic, 2, 0, 7)]
        for _ in range(2):  # a second read on the same client sees the same records
            got = [
                (p, o)
                for cols in client.read(ranges, chunk=4)
                for p, o in zip(cols.partitions, cols.offsets, strict=True)
            ]
            assert sorted(got) == [(0, o) for o in range(5, 25)] + [(2, o) for o in range(7)]
        assert (
            client.partitions(
                Subscription(pattern=topic.replace("export", "exp.rt")), missing_ok=False
            )
            == tps
        )
        assert client.partitions(Subscription(topics=(unique("none"),)), missing_ok=True) == []
    assert len(placed) == 600


def delete_before(bootstrap: str, topic: str, offset: int) -> None:
    from confluent_kafka import TopicPartition as CkTopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_records([CkTopicPartition(topic, 0, offset)]).values():
        future.result(15)


def test_export_starts_at_the_log_start_after_deletion(bootstrap: str, tmp_path: Path) -> None:
    from headrace.spark_bridge._kafka import ConfluentClient

    topic, _ = make_topic(bootstrap, 40, partitions=1)
    delete_before(bootstrap, topic, 30)
    with ConfluentClient(bootstrap) as client:
        assert client.bounds([TopicPartition(topic, 0)])[TopicPartition(topic, 0)].earliest == 30
    assert export_topic(bootstrap, topic, str(tmp_path / "d")).records == 10


def test_reading_a_deleted_range_is_data_loss(bootstrap: str) -> None:
    from headrace.spark_bridge import OffsetRange, OffsetRangeError
    from headrace.spark_bridge._kafka import ConfluentClient

    topic, _ = make_topic(bootstrap, 40, partitions=1)
    delete_before(bootstrap, topic, 30)
    with ConfluentClient(bootstrap, stall_timeout=3) as client, pytest.raises(OffsetRangeError):
        list(client.read([OffsetRange(topic, 0, 0, 40)]))
