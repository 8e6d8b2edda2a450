"""Timestamped stores keep each value's timestamp through the changelog, a restore and a
checkpoint; an aggregation restarted from its changelog stamps its results with the
timestamps it had before (Kafka Streams' ``ValueAndTimestamp`` stores)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from headrace.dsl import Serdes, StreamsBuilder, TimeWindows, Windowed, materialized
from headrace.state import Stores, StoreTestContext, ValueAndTimestamp
from headrace.streams import ConsumedRecord, ProducedRecord, TaskExecutor, Topology
from headrace.streams.runtime._standby import apply_changelog

S = Serdes.string()
L = Serdes.long()


def _changelog_records(
    context: StoreTestContext, store: str
) -> list[tuple[int, bytes, bytes | None, int]]:
    """The store's logged changes as the runtime's changelog reader hands them over:
    ``(offset, key, value, timestamp)``."""
    return [
        (offset, key, value, timestamp)
        for offset, (name, key, value, timestamp) in enumerate(context.changelog)
        if name == store
    ]


@pytest.mark.parametrize("persistent", [False, True])
def test_a_changelog_record_holds_the_plain_value_and_the_values_timestamp(
    persistent: bool, tmp_path: Path
) -> None:
    """Kafka Streams' ChangeLoggingTimestampedKeyValueBytesStore layout: no 8-byte
    prefix in the changelog, the value's timestamp as the record's (a delete has stream
    time), through a cache flush (the bulk path) and a direct put alike."""
    for cached in (False, True):
        builder = (
            Stores.key_value_store(f"agg{cached}", persistent=persistent)
            .with_key_serde(S)
            .with_value_serde(L)
            .with_timestamps()
        )
        store = (builder.with_caching_enabled() if cached else builder).build()
        context = StoreTestContext(state_dir=tmp_path / str(cached), stream_time=9000)
        store.init(context)
        store.put_with_timestamp("a", 7, 2000)
        store.put_with_timestamp("b", 1, 500)
        store.flush()
        store.put_with_timestamp("b", None, 900)
        store.flush()
        assert [(k, v, ts) for _, k, v, ts in _changelog_records(context, store.name)] == [
            (b"a", L.serialize("", 7), 2000),
            (b"b", L.serialize("", 1), 500),
            (b"b", None, 9000),
        ]
        store.close()


@pytest.mark.parametrize("persistent", [False, True])
def test_a_window_stores_changelog_record_holds_the_plain_value_and_its_timestamp(
    persistent: bool, tmp_path: Path
) -> None:
    builder = (
        Stores.window_store("w", retention=60_000, window_size=10_000, persistent=persistent)
        .with_key_serde(S)
        .with_value_serde(L)
        .with_timestamps()
        .with_caching_enabled()
    )
    context = StoreTestContext(state_dir=tmp_path / "first", stream_time=9000)
    store = builder.build()
    store.init(context)
    store.put_with_timestamp("k", 4, 0, 7000)
    store.put_with_timestamp("k", 5, 10_000, 12_000)
    store.flush()
    records = _changelog_records(context, "w")
    assert [(v, ts) for _, _, v, ts in records] == [
        (L.serialize("", 4), 7000),
        (L.serialize("", 5), 12_000),
    ]
    store.close()

    again = builder.build()
    again.init(StoreTestContext(state_dir=tmp_path / "second"))
    apply_changelog(again, "w", "0_0", records)
    assert again.fetch_with_timestamp("k", 0) == (4, 7000)
    assert again.fetch_with_timestamp("k", 10_000) == (5, 12_000)
    assert list(again.fetch("k", 0, 20_000)) == [(0, 4), (10_000, 5)]
    again.close()


@pytest.mark.parametrize("persistent", [False, True])
def test_a_restore_from_the_changelog_gives_values_and_timestamps_back(
    persistent: bool, tmp_path: Path
) -> None:
    builder = (
        Stores.key_value_store("agg", persistent=persistent)
        .with_key_serde(S)
        .with_value_serde(L)
        .with_timestamps()
        .with_caching_enabled()
    )
    first_context = StoreTestContext(state_dir=tmp_path / "first")
    first = builder.build()
    first.init(first_context)
    first.put_with_timestamp("a", 7, 2000)
    first.put_with_timestamp("b", 1, 500)
    first.put_with_timestamp("b", None, 900)  # a delete has no timestamp to keep
    first.put_with_timestamp("c", 3, 4000)
    first.flush()
    first.close()

    context = StoreTestContext(state_dir=tmp_path / "second")
    again = builder.build()
    again.init(context)
    # as the runtime's restorer and a standby apply a changelog
    apply_changelog(again, "agg", "0_0", _changelog_records(first_context, "agg"))
    assert again.get("a") == 7
    assert again.get_with_timestamp("a") == ValueAndTimestamp(7, 2000)
    assert again.get_with_timestamp("b") is None
    assert again.get_with_timestamp("c") == (3, 4000)
    assert list(again.all()) == [("a", 7), ("c", 3)]
    if persistent:  # a checkpoint copies the stamped bytes as they are
        again.flush()
        again.checkpoint(tmp_path / "copy" / "rocksdb" / "agg")
        again.close()
        copy = builder.build()
        copy.init(StoreTestContext(state_dir=tmp_path / "copy"))
        assert copy.get_with_timestamp("a") == (7, 2000)
        copy.close()
    else:
        again.close()


@pytest.mark.parametrize("persistent", [False, True])
def test_a_changelog_of_a_plain_store_restores_with_its_records_timestamps(
    persistent: bool, tmp_path: Path
) -> None:
    """What an earlier version logged for an aggregation: a plain store's changelog,
    bare values stamped with stream time. It restores; each value's timestamp is its
    record's, the stream time when it was logged."""
    plain = Stores.key_value_store("agg", persistent=persistent).with_key_serde(S)
    old_context = StoreTestContext(state_dir=tmp_path / "old", stream_time=3000)
    old = plain.with_value_serde(L).build()
    old.init(old_context)
    old.put("a", 7)
    old_context.stream_time = 5000
    old.put("b", 2)
    old.delete("b")
    old.close()

    store = plain.with_value_serde(L).with_timestamps().build()
    store.init(StoreTestContext(state_dir=tmp_path / "new"))
    apply_changelog(store, "agg", "0_0", _changelog_records(old_context, "agg"))
    assert store.get_with_timestamp("a") == (7, 3000)
    assert store.get_with_timestamp("b") is None
    store.close()


def test_a_plain_put_is_stamped_with_stream_time(tmp_path: Path) -> None:
    store = Stores.key_value_store("kv").with_key_serde(S).with_value_serde(L).with_timestamps()
    built = store.build()
    context = StoreTestContext(state_dir=tmp_path, stream_time=1234)
    built.init(context)
    built.put("k", 5)
    assert built.get_with_timestamp("k") == (5, 1234)
    built.close()


def test_a_timestamped_window_store_reads_values_without_their_timestamps(tmp_path: Path) -> None:
    builder = (
        Stores.window_store("w", retention=60_000, window_size=10_000)
        .with_key_serde(S)
        .with_value_serde(L)
        .with_timestamps()
    )
    store = builder.build()
    store.init(StoreTestContext(state_dir=tmp_path))
    store.put_with_timestamp("k", 4, 0, 7000)
    assert store.get("k", 0) == 4
    assert store.fetch_with_timestamp("k", 0) == (4, 7000)
    assert list(store.fetch("k", 0, 10_000)) == [(0, 4)]
    store.close()


# -- an aggregation restarted from its changelog ------------------------------------------

IN, OUT = "ts-in", "ts-out"
_offsets = itertools.count()


def _records(*rows: tuple[str, int, int]) -> list[ConsumedRecord]:
    return [(IN, 0, next(_offsets), ts, k.encode(), L.serialize(IN, v), ()) for k, v, ts in rows]


def _max_reduce() -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream(IN, key_serde=S, value_serde=L)
        .group_by_key()
        .reduce(max, materialized=materialized("maxima"))
        .to_stream()
        .to(OUT, key_serde=S, value_serde=L)
    )
    return builder.build()


def _final_counts() -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream(IN, key_serde=S, value_serde=L)
        .group_by_key()
        .windowed_by(TimeWindows.of_size(10_000).grace(0))
        .emit_final()
        .count(materialized=materialized("counts"))
        .to_stream()
        .map(lambda k, v: (f"{k.key}@{k.window.start}", v) if isinstance(k, Windowed) else (k, v))
        .to(OUT, key_serde=S, value_serde=L)
    )
    return builder.build()


def _run(task: TaskExecutor, records: list[ConsumedRecord]) -> list[ProducedRecord]:
    task.process(records)
    task.flush()
    return task.drain()


def _outputs(produced: list[ProducedRecord]) -> list[tuple[str, int | None, int]]:
    return [
        (key.decode(), L.deserialize(OUT, value), ts)
        for topic, key, value, ts, *_ in produced
        if topic == OUT and key is not None and value is not None
    ]


def _restart(
    topology: Topology, root: Path, produced: list[ProducedRecord], app: str
) -> TaskExecutor:
    """A second instance on an empty state directory: RocksDB stores opened, the first
    instance's changelog records applied as the runtime's restorer applies them, then
    started."""
    task = TaskExecutor(topology, 0, 0, {"application_id": app}, state_dir=root)
    task.open_stores()
    for name, store in task.stores.items():
        topic = f"{app}-{name}-changelog"
        records = [
            (i, key, value, timestamp)
            for i, (t, key, value, timestamp, *_) in enumerate(produced)
            if t == topic and key is not None
        ]
        apply_changelog(store, name, "0_0", records)
    task.start()
    return task


def test_a_restarted_aggregation_stamps_with_the_timestamp_it_had(tmp_path: Path) -> None:
    app = "ts-restart"
    first = TaskExecutor(_max_reduce(), 0, 0, {"application_id": app}, state_dir=tmp_path / "a")
    first.init()
    produced = _run(first, _records(("k", 5, 2000)))
    first.close()
    assert _outputs(produced) == [("k", 5, 2000)]

    again = _restart(_max_reduce(), tmp_path / "b", produced, app)
    # older than the restored aggregate's 2000: the result keeps 2000
    assert _outputs(_run(again, _records(("k", 7, 1000)))) == [("k", 7, 2000)]
    again.close()


def test_a_restarted_window_emits_its_final_result_with_its_newest_timestamp(
    tmp_path: Path,
) -> None:
    """The window [0, 10000) took 5000 before the restart; its final result, emitted
    after it, is stamped 5000 (not the window's last millisecond, 9999)."""
    app = "ts-final"
    first = TaskExecutor(_final_counts(), 0, 0, {"application_id": app}, state_dir=tmp_path / "a")
    first.init()
    produced = _run(first, _records(("k", 1, 5000), ("k", 1, 3000)))
    first.close()
    assert _outputs(produced) == []

    again = _restart(_final_counts(), tmp_path / "b", produced, app)
    assert _outputs(_run(again, _records(("x", 1, 12_000)))) == [("k@0", 2, 5000)]
    again.close()
