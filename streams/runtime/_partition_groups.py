"""Which source partitions form one task, and how many partitions internal topics get.

A task is one sub-topology on one partition number: partition ``p`` of every source
topic of sub-topology ``s`` goes to task ``s_p``. That is what co-partitioning means, so
the source topics of one sub-topology must all have the same partition count; the
check runs at start-up, before the application joins its group.

>>> layout = TaskLayout({0: ("clicks", "views")}, {"clicks": 2, "views": 2})
>>> layout.tasks()
{'0_0': (('clicks', 0), ('views', 0)), '0_1': (('clicks', 1), ('views', 1))}
>>> layout.task_of(("views", 1))
'0_1'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .._topology import Topology
from ._client import TopicPartition
from ._errors import CoPartitionError, SettingsError


def task_id(subtopology: int, partition: int) -> str:
    return f"{subtopology}_{partition}"


def parse_task_id(task: str) -> tuple[int, int]:
    sub, _, partition = task.partition("_")
    return int(sub), int(partition)


@dataclass(frozen=True)
class TaskLayout:
    """Source topics per sub-topology plus every source topic's partition count."""

    sources: Mapping[int, tuple[str, ...]]
    partition_counts: Mapping[str, int]

    def partitions_of(self, subtopology: int) -> int:
        counts = {t: self.partition_counts[t] for t in self.sources[subtopology]}
        if len(set(counts.values())) > 1:
            raise CoPartitionError(
                f"sub-topology {subtopology} reads topics that must be co-partitioned but "
                f"have different partition counts: {counts}"
            )
        return next(iter(counts.values()), 0)

    def check(self) -> None:
        """Raise :class:`CoPartitionError` unless every sub-topology is co-partitioned."""
        for sub in self.sources:
            self.partitions_of(sub)

    def tasks(self) -> dict[str, tuple[TopicPartition, ...]]:
        out: dict[str, tuple[TopicPartition, ...]] = {}
        for sub, topics in sorted(self.sources.items()):
            for p in range(self.partitions_of(sub)):
                out[task_id(sub, p)] = tuple((t, p) for t in topics)
        return out

    def task_of(self, tp: TopicPartition) -> str:
        topic, partition = tp
        for sub, topics in self.sources.items():
            if topic in topics:
                return task_id(sub, partition)
        raise KeyError(tp)


def source_topics(topology: Topology, application_id: str) -> dict[int, tuple[str, ...]]:
    """Broker-side source topic names of each sub-topology that reads any."""
    out: dict[int, tuple[str, ...]] = {}
    for sub in topology.subtopologies():
        if sub.source_patterns:
            raise SettingsError(
                f"sub-topology {sub.id} subscribes by pattern, which the runtime does not support yet"
            )
        if sub.source_topics:
            out[sub.id] = tuple(topology.topic_name(t, application_id) for t in sub.source_topics)
    return out


def changelog_topics(topology: Topology, application_id: str) -> dict[int, dict[str, str]]:
    """For each sub-topology, its logged stores and their changelog topics."""
    out: dict[int, dict[str, str]] = {}
    for sub in topology.subtopologies():
        logged = {}
        for store in sub.stores:
            builder = topology.store_builder(store)
            if getattr(builder, "logging_enabled", False):
                logged[store] = f"{application_id}-{store}-changelog"
        out[sub.id] = logged
    return out


def internal_topic_partitions(
    topology: Topology, application_id: str, external_counts: Mapping[str, int]
) -> dict[str, int]:
    """Partition counts for repartition topics, as Kafka Streams chooses them.

    A declared count wins. Otherwise a repartition topic read by a sub-topology that
    also reads external topics takes their count, so it is co-partitioned with them (a
    join after ``select_key`` reads both); any other takes the widest external source.

    >>> from headrace.streams import Topology
    >>> t = (Topology().add_internal_topic("by-customer-repartition")
    ...      .add_source("orders", "orders").add_source("keyed", "by-customer-repartition")
    ...      .add_processor("join", lambda: None, "orders", "keyed"))
    >>> internal_topic_partitions(t, "app", {"orders": 2, "clicks": 6})
    {'app-by-customer-repartition': 2}
    """
    widest = max(external_counts.values(), default=1)
    internal = {f"{application_id}-{name}" for name in topology.internal_topics}
    beside: dict[str, int] = {}
    for topics in source_topics(topology, application_id).values():
        counts = {external_counts[t] for t in topics if t not in internal and t in external_counts}
        if len(counts) != 1:
            continue  # no external source, or already not co-partitioned (checked later)
        for t in topics:
            if t in internal:
                beside[t] = max(beside.get(t, 0), *counts)
    return {
        name: declared or beside.get(name, widest)
        for name, declared in (
            (f"{application_id}-{n}", d) for n, d in topology.internal_topics.items()
        )
    }
