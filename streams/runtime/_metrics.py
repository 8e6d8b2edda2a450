"""Prometheus metrics of one application instance, in a registry of its own.

A registry per instance keeps two apps in one process (tests, the demo) from
colliding. Rates (records per second per task) are ``rate()`` over the counters.
Counters are bumped once per batch, never per record (bad records, rare by nature,
are counted one by one).

What the record counters count:

- ``headrace_streams_records_produced_total{topic, kind}``: records the broker
  acknowledged (under exactly-once: whose transaction committed), counted at each
  commit (``_counted.py``). Every topic the instance writes is included, and ``kind``
  tells them apart: ``sink`` (the topology's output), ``repartition`` (internal topics
  between sub-topologies), ``changelog`` (store changelogs), ``dead_letter``. Sum over
  ``kind="sink"`` for the application's output alone.
- ``headrace_streams_records_dead_lettered_total{topic, reason}``: records sent to the
  dead-letter topic instead of being processed (``reason``: ``deserialization``,
  ``processing``) or produced (``production``); ``topic`` is the topic the record
  was read from, or bound for.
- ``headrace_streams_records_skipped_total{topic, reason}``: records dropped on
  purpose by a ``continue`` error handler, with the same labels.
- ``headrace_streams_late_records_dropped_total{operator}``: records a windowed
  aggregation dropped because all their windows had closed, per operator (read from
  the DSL program's ``late_records`` when it is scraped).

What the timings and the state families hold:

- ``headrace_streams_process_latency_seconds{task}``: the time a task took over one
  polled batch of a partition (a histogram; with ``records_consumed_total`` it gives
  records per second and the time per record);
- ``headrace_streams_punctuation_latency_seconds``: one round of wall-clock
  punctuations that ran something; ``commit_latency_seconds``: one full commit;
- ``headrace_streams_store_operations_total{task, store, operation}`` and
  ``headrace_streams_store_operation_seconds{task, store, operation}`` (a summary of
  the operations the store timed: it samples gets and puts), and
  ``headrace_streams_store_keys{task, store}`` (a key-value store's estimate), read
  from the running tasks' stores when scraped;
- ``headrace_streams_rebalances_total``: assignments this instance received;
- ``headrace_streams_transactions_aborted_total``: exactly-once transactions this
  instance aborted (a failed commit, or one on revocation); their input is read and
  processed again, so ``records_consumed_total`` counts it twice.

The process's memory (RocksDB's block cache, memtables and table readers, Python's
allocated blocks, the C heap) is read when scraped: ``_memory_metrics.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
    SummaryMetricFamily,
)

from ._memory_metrics import MemoryStats

SINK, REPARTITION, CHANGELOG, DEAD_LETTER = "sink", "repartition", "changelog", "dead_letter"


class _LateRecords:
    """Collects the late-record counts of the DSL programs an instance runs."""

    def __init__(self) -> None:
        self.sources: list[Any] = []  # objects with ``by_operator() -> dict[str, int]``

    def describe(self) -> Iterator[Metric]:
        yield self._family()

    def collect(self) -> Iterator[Metric]:
        family = self._family()
        counts: dict[str, int] = {}
        for source in self.sources:
            for operator, n in source.by_operator().items():
                counts[operator] = counts.get(operator, 0) + n
        for operator, n in sorted(counts.items()):
            family.add_metric([operator], n)
        yield family

    @staticmethod
    def _family() -> CounterMetricFamily:
        return CounterMetricFamily(
            "headrace_streams_late_records_dropped",
            "Records windowed aggregations dropped as late (all their windows closed)",
            labels=["operator"],
        )


StoreListing = Callable[[], Iterable[tuple[str, str, Any]]]  # (task id, store name, store)
_STORE_OPERATIONS = ("get", "put", "put_all", "delete", "range", "flush", "restore")


class _StoreStats:
    """Operation counts and timings and key estimates of the stores of running tasks."""

    def __init__(self) -> None:
        self.listing: StoreListing = lambda: ()

    def describe(self) -> Iterator[Metric]:
        yield from self._families()

    def collect(self) -> Iterator[Metric]:
        operations, seconds, keys = self._families()
        for task, name, store in self.listing():
            stats = getattr(store, "metrics", None)
            if stats is not None:
                for op in _STORE_OPERATIONS:
                    op_stats = getattr(stats, op)
                    operations.add_metric([task, name, op], op_stats.count)
                    seconds.add_metric([task, name, op], op_stats.timed, op_stats.total_ns / 1e9)
            estimate = getattr(store, "approximate_num_entries", None)
            if estimate is not None:
                keys.add_metric([task, name], estimate())
        yield from (operations, seconds, keys)

    @staticmethod
    def _families() -> tuple[CounterMetricFamily, SummaryMetricFamily, GaugeMetricFamily]:
        labels = ["task", "store", "operation"]
        return (
            CounterMetricFamily(
                "headrace_streams_store_operations",
                "Store operations, by task, store and operation",
                labels=labels,
            ),
            SummaryMetricFamily(
                "headrace_streams_store_operation_seconds",
                "Time of the store operations that were timed (gets and puts are sampled)",
                labels=labels,
            ),
            GaugeMetricFamily(
                "headrace_streams_store_keys",
                "Estimated keys in a key-value store",
                labels=["task", "store"],
            ),
        )


class AppMetrics:
    def __init__(self, application_id: str) -> None:
        self.registry = CollectorRegistry()
        reg = self.registry
        self.application_id = application_id
        self.records_consumed = Counter(
            "headrace_streams_records_consumed", "Records fed to tasks", ["task"], registry=reg
        )
        self.records_produced = Counter(
            "headrace_streams_records_produced",
            "Records the broker acknowledged (exactly-once: committed), by topic and kind "
            "(sink, repartition, changelog, dead_letter)",
            ["topic", "kind"],
            registry=reg,
        )
        self.records_dead_lettered = Counter(
            "headrace_streams_records_dead_lettered",
            "Records sent to the dead-letter topic, by source or destination topic and reason",
            ["topic", "reason"],
            registry=reg,
        )
        self.records_skipped = Counter(
            "headrace_streams_records_skipped",
            "Records dropped on purpose by an error handler, by topic and reason",
            ["topic", "reason"],
            registry=reg,
        )
        self._late = _LateRecords()
        reg.register(self._late)
        # Topic -> kind of the topics this instance writes; unnamed topics are sinks.
        self.topic_kinds: dict[str, str] = {}
        # The sum of records_produced_total, for the instance's status.
        self.produced_total = 0
        self.consumer_lag = Gauge(
            "headrace_streams_consumer_lag",
            "Records behind the end of a source partition",
            ["topic", "partition"],
            registry=reg,
        )
        self.commit_latency = Histogram(
            "headrace_streams_commit_latency_seconds",
            "Time of one full commit",
            buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
            registry=reg,
        )
        self.commits = Counter("headrace_streams_commits", "Completed commits", registry=reg)
        self.restored_records = Counter(
            "headrace_streams_restored_records",
            "Changelog records restored",
            ["task", "store"],
            registry=reg,
        )
        self.restore_remaining = Gauge(
            "headrace_streams_restore_remaining_records",
            "Changelog records left to restore",
            ["task", "store"],
            registry=reg,
        )
        self.standby_records = Counter(
            "headrace_streams_standby_records",
            "Changelog records applied to standby replicas",
            ["task", "store"],
            registry=reg,
        )
        self.errors = Counter(
            "headrace_streams_errors",
            "Records that met an error, by kind and action taken",
            ["kind", "action"],
            registry=reg,
        )
        self.tasks = Gauge("headrace_streams_tasks", "Tasks by state", ["state"], registry=reg)
        self.process_latency = Histogram(
            "headrace_streams_process_latency_seconds",
            "Time a task took over one polled batch of a partition",
            ["task"],
            buckets=(0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1),
            registry=reg,
        )
        self.punctuation_latency = Histogram(
            "headrace_streams_punctuation_latency_seconds",
            "Time of one round of wall-clock punctuations that ran something",
            buckets=(0.0001, 0.001, 0.01, 0.1, 1),
            registry=reg,
        )
        self.rebalances = Counter(
            "headrace_streams_rebalances", "Assignments this instance received", registry=reg
        )
        self.transactions_aborted = Counter(
            "headrace_streams_transactions_aborted",
            "Transactions this instance aborted; their input is processed again",
            registry=reg,
        )
        self._stores = _StoreStats()
        reg.register(self._stores)
        reg.register(MemoryStats())  # RocksDB's and Python's memory: _memory_metrics.py

    def name_topics(self, changelogs: set[str], repartitions: set[str], dead_letters: str) -> None:
        """Say which written topics are internal, for the ``kind`` label."""
        kinds = {t: REPARTITION for t in repartitions}
        kinds.update((t, CHANGELOG) for t in changelogs)
        kinds[dead_letters] = DEAD_LETTER
        self.topic_kinds = kinds

    def produced(self, counts: Mapping[str, int]) -> None:
        """``counts`` records per topic were delivered."""
        kinds = self.topic_kinds
        for topic, n in counts.items():
            if n > 0:
                self.records_produced.labels(topic, kinds.get(topic, SINK)).inc(n)
                self.produced_total += n

    def watch_late_records(self, late_records: Any) -> None:
        """Expose a DSL program's late-record counts (``StreamsBuilder.late_records``)."""
        if late_records is not None and late_records not in self._late.sources:
            self._late.sources.append(late_records)

    def watch_stores(self, listing: StoreListing) -> None:
        """Read store statistics, when scraped, from ``listing()``'s stores."""
        self._stores.listing = listing

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
