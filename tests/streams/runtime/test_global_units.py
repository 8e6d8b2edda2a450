"""Global stores and repartition-topic counts without a broker: a reader over in-memory
topics stands in for the Kafka client, the stores and checkpoints are real."""

from __future__ import annotations

import doctest
from collections.abc import Collection
from pathlib import Path

import pytest

from headrace.dsl import Serdes, StreamsBuilder
from headrace.streams import StreamsConfig, TopologyError
from headrace.streams._record import ConsumedRecord
from headrace.streams.runtime import TaskLayout
from headrace.streams.runtime import _partition_groups as partition_groups
from headrace.streams.runtime._global import GlobalState, GlobalStores, global_topics
from headrace.streams.runtime._partition_groups import internal_topic_partitions, source_topics
from headrace.streams.runtime._tasks import TaskManager

TP = tuple[str, int]
S = Serdes.string()


class TopicsReader:
    """Reads in-memory partitions; offsets listed in ``markers`` never come out as
    records, as transaction markers do not."""

    def __init__(
        self,
        logs: dict[TP, list[tuple[int, bytes, bytes | None]]],
        markers: dict[TP, int] | None = None,
    ) -> None:
        self.logs = logs
        self.ends = {
            tp: max([o for o, _k, _v in recs] + [markers.get(tp, -1) if markers else -1]) + 1
            for tp, recs in logs.items()
        }
        self.positions: dict[TP, int] = {}
        self.read = 0

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def assign(self, partitions: Collection[TP]) -> None:
        self.positions = dict.fromkeys(partitions, 0)

    async def seek(self, partition: TP, offset: int | None) -> None:
        self.positions[partition] = offset or 0

    async def end_offsets(self, partitions: Collection[TP]) -> dict[TP, int]:
        return {tp: self.ends.get(tp, 0) for tp in partitions}

    async def position(self, partition: TP) -> int | None:
        return self.positions.get(partition)

    async def poll(self, timeout_ms: int, max_records: int) -> dict[TP, list[ConsumedRecord]]:
        out: dict[TP, list[ConsumedRecord]] = {}
        for tp, position in self.positions.items():
            recs = [r for r in self.logs.get(tp, []) if r[0] >= position][:max_records]
            if recs:
                out[tp] = [(tp[0], tp[1], o, 1000 + o, k, v, ()) for o, k, v in recs]
            left = [
                r for r in self.logs.get(tp, []) if r[0] > (recs[-1][0] if recs else position - 1)
            ]
            # Past the last record returned; past trailing markers once nothing is left.
            self.positions[tp] = recs[-1][0] + 1 if left else max(position, self.ends.get(tp, 0))
            self.read += len(recs)
        return out


def _enrich() -> StreamsBuilder:
    builder = StreamsBuilder()
    customers = builder.global_table("customers", key_serde=S, value_serde=S)
    orders = builder.stream("orders", key_serde=S, value_serde=S)
    orders.join(customers, lambda _k, v: v.split(":")[0], lambda o, c: f"{o}@{c}").to(
        "enriched", key_serde=S, value_serde=S
    )
    return builder


def _globals(tmp: Path, reader: TopicsReader, counts: dict[str, int]) -> GlobalStores:
    topology = _enrich().build()
    return GlobalStores(topology, StreamsConfig(application_id="g"), tmp, reader, counts, 3, 0)


def _customers(n: int, start: int = 0) -> list[tuple[int, bytes, bytes | None]]:
    return [(start + i, f"c{start + i}".encode(), f"name{start + i}".encode()) for i in range(n)]


async def test_bootstrap_reads_every_partition_to_its_end_then_checkpoints(tmp_path: Path) -> None:
    # Partition 1 ends in a marker at offset 4 that never comes out as a record.
    logs = {("customers", 0): _customers(5), ("customers", 1): _customers(4, 100)}
    logs[("customers", 1)] = [(o - 100, k, v) for o, k, v in logs[("customers", 1)]]
    reader = TopicsReader(logs, markers={("customers", 1): 4})
    g = _globals(tmp_path, reader, {"customers": 2})
    await g.bootstrap()
    assert g.state is GlobalState.RUNNING
    assert g.bootstrapped_records == 9
    store = g.stores[next(iter(g.stores))]
    assert store.get("c4") == "name4" and store.get("c103") == "name103"
    assert g.offsets == {("customers", 0): 5, ("customers", 1): 5}
    assert (tmp_path / "g" / "global" / ".checkpoint").read_text().splitlines()[2:] == [
        "customers 0 5",
        "customers 1 5",
    ]
    await g.close()


async def test_a_restart_reads_only_what_came_after_the_checkpoint(tmp_path: Path) -> None:
    logs = {("customers", 0): _customers(6)}
    g = _globals(tmp_path, TopicsReader(logs), {"customers": 1})
    await g.bootstrap()
    await g.close()
    logs[("customers", 0)] += [(6, b"c0", b"renamed"), (7, b"c7", b"name7")]
    reader = TopicsReader(logs)
    again = _globals(tmp_path, reader, {"customers": 1})
    await again.bootstrap()
    assert again.bootstrapped_records == 2 and reader.read == 2
    store = again.stores[next(iter(again.stores))]
    assert (
        store.get("c0") == "renamed" and store.get("c5") == "name5" and store.get("c7") == "name7"
    )
    await again.close()


async def test_without_a_checkpoint_old_state_is_wiped_and_read_again(tmp_path: Path) -> None:
    g = _globals(tmp_path, TopicsReader({("customers", 0): _customers(3)}), {"customers": 1})
    await g.bootstrap()
    await g.close()
    (tmp_path / "g" / "global" / ".checkpoint").unlink()
    reader = TopicsReader({("customers", 0): [(0, b"c9", b"only")]})
    again = _globals(tmp_path, reader, {"customers": 1})
    await again.bootstrap()
    store = again.stores[next(iter(again.stores))]
    assert store.get("c0") is None and store.get("c9") == "only"
    await again.close()


async def test_updates_polled_while_running_reach_the_store_and_the_next_checkpoint(
    tmp_path: Path,
) -> None:
    logs = {("customers", 0): _customers(2)}
    reader = TopicsReader(logs)
    g = _globals(tmp_path, reader, {"customers": 1})
    await g.bootstrap()
    logs[("customers", 0)].append((2, b"c0", None))  # a tombstone deletes
    reader.ends[("customers", 0)] = 3
    assert await g.poll(0) == 1
    store = g.stores[next(iter(g.stores))]
    assert store.get("c0") is None
    await g.checkpoint()
    assert "customers 0 3" in (tmp_path / "g" / "global" / ".checkpoint").read_text()
    await g.close()


async def test_stream_tasks_get_the_global_stores(tmp_path: Path) -> None:
    topology = _enrich().build()
    config = StreamsConfig(application_id="g")
    sources = source_topics(topology, "g")
    manager = TaskManager(topology, config, tmp_path, sources, {}, lambda t: 1, lambda: 0)
    with pytest.raises(TopologyError, match="global stores"):
        manager.open([("orders", 0)])
    g = _globals(tmp_path, TopicsReader({("customers", 0): _customers(2)}), {"customers": 1})
    await g.bootstrap()
    manager = TaskManager(
        topology, config, tmp_path, sources, {}, lambda t: 1, lambda: 0, global_stores=g.stores
    )
    (task,) = manager.open([("orders", 0)])
    task.restored({})
    out = task.process(("orders", 0), [("orders", 0, 0, 5, b"o1", b"c1:pen", ())])
    assert [(t, k, v) for t, k, v, *_ in out] == [("enriched", b"o1", b"c1:pen@name1")]
    task.close()
    await g.close()
    assert global_topics(topology, "g") == ("customers",)


def _select_key_join(declared: int | None = None) -> StreamsBuilder:
    builder = StreamsBuilder()
    table = builder.table("customers", key_serde=S, value_serde=S)
    orders = builder.stream("orders", key_serde=S, value_serde=S)
    orders.select_key(lambda _k, v: v).join(table, lambda o, c: f"{o}@{c}").to("out")
    builder.stream("clicks", key_serde=S, value_serde=S).to("clicks-copy")
    return builder


def test_a_repartition_topic_joined_with_an_external_topic_takes_its_partition_count() -> None:
    topology = _select_key_join().build()
    external = {"customers": 2, "orders": 6, "clicks": 8}
    counts = internal_topic_partitions(topology, "app", external)
    (repartition,) = counts
    assert counts[repartition] == 2  # not the widest (8): it is joined with customers
    layout = TaskLayout(source_topics(topology, "app"), {**external, **counts})
    layout.check()  # would raise CoPartitionError with 8


def test_a_repartition_topic_read_alone_takes_the_widest_external_count() -> None:
    builder = StreamsBuilder()
    builder.stream("orders", key_serde=S, value_serde=S).group_by(
        lambda _k, v: v
    ).count().to_stream().to("n")
    builder.stream("clicks", key_serde=S, value_serde=S).to("clicks-copy")
    topology = builder.build()
    counts = internal_topic_partitions(topology, "app", {"orders": 3, "clicks": 5})
    assert counts and set(counts.values()) == {5}


def test_a_declared_repartition_count_wins() -> None:
    topology = _select_key_join().build()
    (name,) = topology.internal_topics
    topology.add_internal_topic(name, 4)
    counts = internal_topic_partitions(topology, "app", {"customers": 2, "orders": 6})
    assert counts == {f"app-{name}": 4}


def test_the_partition_groups_docstring_examples_run() -> None:
    assert doctest.testmod(partition_groups).failed == 0
