"""The broker's Prometheus metrics (``headrace broker --metrics-listen``).

Two kinds, so that the hot paths pay almost nothing:

- **per request**, counted once when its handler returns (``Connection``): requests by
  API and version, their latency, the error codes their responses carry, and for
  produce and fetch the bytes, record batches and records in and out per topic, read
  from the batches' headers (never per record);
- **read when scraped**, from the broker's state: every partition's log start and end
  offsets and size, every group's state, members and lag per partition, open
  transactions and the age of the oldest, open connections, fsync count and time,
  and the maintenance passes (retention, compaction) with their failures;
- **the process's memory**, read when scraped (``headrace.base.memory``): Python's
  allocated blocks and the C heap's bytes in use and size, so a growing resident size
  can be told apart as Python objects, C allocations or free heap kept;
- **per refused login** (SaslAuthenticate, or a bare SASL token): authentication
  failures by listener.

Names follow Prometheus conventions: ``headrace_broker_`` prefix, ``_total`` on
counters, ``_seconds`` and ``_bytes`` units.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from headrace.base.memory import c_heap, python_blocks

from ._entities import entity_lists
from .records._batches import HEADER_SIZE, LOG_OVERHEAD

if TYPE_CHECKING:
    from ._state import BrokerState

PRODUCE_KEY, FETCH_KEY = 0, 1
# Fields of a record batch's header read for counting, and where they are.
_BATCH_LENGTH = struct.Struct(">i")  # at byte 8 of a record batch: bytes after the first 12
_MAGIC_AT, _ATTRIBUTES_AT, _RECORDS_COUNT_AT = 16, 21, 57
_ATTRIBUTES_AND_DELTA = struct.Struct(">hi")
_RECORDS_COUNT = struct.Struct(">i")
_COMPRESSION_MASK, _MAX_CODEC, _CONTROL_BIT = 0x07, 4, 0x20
_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)


class BrokerMetrics:
    def __init__(self) -> None:
        self.registry = reg = CollectorRegistry()
        self.requests = Counter(
            "headrace_broker_requests",
            "Requests answered, by API and version",
            ["api", "version"],
            registry=reg,
        )
        self.request_latency = Histogram(
            "headrace_broker_request_latency_seconds",
            "Time from a request's arrival to its response (produce: including the fsync)",
            ["api"],
            buckets=_LATENCY_BUCKETS,
            registry=reg,
        )
        self.response_errors = Counter(
            "headrace_broker_response_errors",
            "Error codes in responses (top level, topics and partitions)",
            ["api", "error"],
            registry=reg,
        )
        self.bytes_in = Counter(
            "headrace_broker_bytes_in",
            "Record batch bytes produced, by topic",
            ["topic"],
            registry=reg,
        )
        self.batches_in = Counter(
            "headrace_broker_batches_in",
            "Record batches produced, by topic",
            ["topic"],
            registry=reg,
        )
        self.records_in = Counter(
            "headrace_broker_records_in",
            "Records produced (transaction markers not counted), by topic",
            ["topic"],
            registry=reg,
        )
        self.records_out = Counter(
            "headrace_broker_records_out",
            "Records fetched in whole batches (transaction markers not counted), by topic",
            ["topic"],
            registry=reg,
        )
        self.bytes_out = Counter(
            "headrace_broker_bytes_out",
            "Record batch bytes fetched, by topic",
            ["topic"],
            registry=reg,
        )
        self.authentication_failures = Counter(
            "headrace_broker_authentication_failures",
            "SASL logins refused, by listener",
            ["listener"],
            registry=reg,
        )
        self.connections_opened = Counter(
            "headrace_broker_connections_opened", "Client connections accepted", registry=reg
        )
        self.maintenance_passes = Counter(
            "headrace_broker_maintenance_passes",
            "Retention and compaction passes, by kind and outcome",
            ["kind", "outcome"],
            registry=reg,
        )
        self.maintenance_seconds = Histogram(
            "headrace_broker_maintenance_seconds",
            "Time of one retention or compaction pass",
            ["kind"],
            buckets=(0.01, 0.1, 1, 10, 60),
            registry=reg,
        )
        self.open_connections = 0
        self._names: dict[int, str] = {}
        # Labelled children looked up once, not per request: (api key, version) to the
        # API's name and its request counter and latency histogram; topic to its
        # produce counters (as many as the registry itself holds).
        self._counted: dict[tuple[int, int], tuple[str, Any, Any]] = {}
        self._produced: dict[str, tuple[Any, Any, Any]] = {}
        self._state_reader = _StateCollector(self)
        reg.register(self._state_reader)

    def authentication_failed(self, listener: str) -> None:
        self.authentication_failures.labels(listener).inc()

    def watch(self, state: BrokerState, api_names: dict[int, str]) -> None:
        """Read partitions, groups and transactions from ``state`` when scraped."""
        self._state_reader.state = state
        self._names = dict(api_names)
        self._counted.clear()

    def exposition(self) -> bytes:
        return generate_latest(self.registry)

    # -- per request --------------------------------------------------------------------

    def answered(
        self, api_key: int, version: int, started: float, request: Any, response: Any
    ) -> None:
        counted = self._counted.get((api_key, version))
        if counted is None:
            api = self._names.get(api_key, str(api_key))
            counted = (
                api,
                self.requests.labels(api, str(version)),
                self.request_latency.labels(api),
            )
            self._counted[(api_key, version)] = counted
        api, requests, latency = counted
        requests.inc()
        latency.observe(time.perf_counter() - started)
        if response is not None:
            for code in _error_codes(response):
                self.response_errors.labels(api, _error_name(code)).inc()
        if api_key == PRODUCE_KEY:
            for topic in request.topic_data:
                bytes_in, batches_in, records_in = self._topic_in(topic.name)
                for partition in topic.partition_data:
                    size, batches, records = _batches(partition.records)
                    bytes_in.inc(size)
                    batches_in.inc(batches)
                    records_in.inc(records)
        elif api_key == FETCH_KEY and response is not None:
            for topic in response.responses:
                size = records = 0
                for p in topic.partitions:
                    counted_out = _batches(p.records)
                    size, records = size + counted_out[0], records + counted_out[2]
                if size:
                    name = _topic_name(topic)
                    self.bytes_out.labels(name).inc(size)
                    self.records_out.labels(name).inc(records)

    def _topic_in(self, topic: str) -> tuple[Any, Any, Any]:
        """The bytes, batches and records counters of a topic produced to."""
        counters = self._produced.get(topic)
        if counters is None:
            counters = (
                self.bytes_in.labels(topic),
                self.batches_in.labels(topic),
                self.records_in.labels(topic),
            )
            self._produced[topic] = counters
        return counters


def _batches(records: bytes | None) -> tuple[int, int, int]:
    """(bytes, batches, records) of a produce request's or a fetched partition's
    records, from the batch headers; a fetch's last batch may be cut short, and only
    whole batches' records are counted, transaction markers not. Records are counted
    up to the first batch that is not whole and well formed, as ``scan_batches`` reads;
    batches, by their lengths, to the end."""
    if not records:
        return 0, 0, 0
    end = len(records)
    position = batches = count = 0
    counting = True
    while position + LOG_OVERHEAD <= end:
        (length,) = _BATCH_LENGTH.unpack_from(records, position + 8)
        if counting:
            counted = _records_in(records, position, length)
            counting = counted is not None
            count += counted or 0
        position += LOG_OVERHEAD + max(length, 0)
        batches += 1
    return end, batches, count


def _records_in(records: bytes, position: int, length: int) -> int | None:
    """The data records (0 for a transaction marker) of the batch at ``position``, or
    None when it is cut short or not well formed."""
    if (
        length < HEADER_SIZE - LOG_OVERHEAD
        or position + LOG_OVERHEAD + length > len(records)
        or records[position + _MAGIC_AT] != 2
    ):
        return None
    attributes, last_offset_delta = _ATTRIBUTES_AND_DELTA.unpack_from(
        records, position + _ATTRIBUTES_AT
    )
    (count,) = _RECORDS_COUNT.unpack_from(records, position + _RECORDS_COUNT_AT)
    if count < 0 or last_offset_delta < 0 or attributes & _COMPRESSION_MASK > _MAX_CODEC:
        return None
    return 0 if attributes & _CONTROL_BIT else count


def _topic_name(topic: Any) -> str:
    name = getattr(topic, "topic", None) or getattr(topic, "name", None)
    return str(name) if name is not None else str(getattr(topic, "topic_id", "?"))


def _error_codes(response: Any) -> Iterator[int]:
    """The non-zero error codes of a response: its own, and those of the items of its
    list fields and of their list fields (topics, then partitions)."""
    yield from _codes_of(response, depth=3)


def _codes_of(entity: Any, depth: int) -> Iterator[int]:
    code = getattr(entity, "error_code", None)
    if code is not None and int(code) != 0:
        yield int(code)
    if depth == 0:
        return
    for items in entity_lists(entity):
        for item in items:
            yield from _codes_of(item, depth - 1)


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name.upper()
    except ValueError:
        return str(code)


def _memory() -> Iterator[Metric]:
    blocks = GaugeMetricFamily(
        "headrace_broker_python_allocated_blocks", "Memory blocks held by Python's allocator"
    )
    blocks.add_metric([], python_blocks())
    yield blocks
    heap = c_heap()
    if heap is None:
        return  # not glibc
    for (name, documentation), value in zip(
        (
            ("malloc_in_use_bytes", "C heap bytes in use (glibc mallinfo2)"),
            ("malloc_heap_bytes", "C heap size, free space kept included (glibc)"),
        ),
        heap,
        strict=True,
    ):
        family = GaugeMetricFamily(f"headrace_broker_{name}", documentation)
        family.add_metric([], value)
        yield family


class _StateCollector:
    """Families read from the broker's state at scrape time."""

    def __init__(self, metrics: BrokerMetrics) -> None:
        self.metrics = metrics
        self.state: BrokerState | None = None

    def describe(self) -> Iterator[Metric]:
        return iter(())  # the families depend on the state; nothing to check up front

    def collect(self) -> Iterator[Metric]:
        state = self.state
        if state is None:
            return
        yield from self._logs(state)
        yield from self._groups(state)
        yield from self._transactions(state)
        connections = GaugeMetricFamily("headrace_broker_connections", "Open client connections")
        connections.add_metric([], self.metrics.open_connections)
        yield connections
        syncs = CounterMetricFamily(
            "headrace_broker_fsyncs", "Log syncs (fsync) done for durable acks"
        )
        syncs.add_metric([], state.syncer.syncs)
        sync_time = CounterMetricFamily("headrace_broker_fsync_seconds", "Time spent in log syncs")
        sync_time.add_metric([], state.syncer.sync_seconds_total)
        yield from (syncs, sync_time)
        yield from _memory()

    @staticmethod
    def _logs(state: BrokerState) -> Iterator[Metric]:
        labels = ["topic", "partition"]
        start = GaugeMetricFamily(
            "headrace_broker_log_start_offset", "First offset of a partition", labels=labels
        )
        end = GaugeMetricFamily(
            "headrace_broker_log_end_offset", "Offset the next record gets", labels=labels
        )
        size = GaugeMetricFamily(
            "headrace_broker_log_size_bytes", "Bytes of a partition's segments", labels=labels
        )
        for log in state.logs.logs():
            key = [log.topic, str(log.partition)]
            start.add_metric(key, log.log_start_offset)
            end.add_metric(key, log.log_end_offset)
            size.add_metric(key, log.size_bytes)
        yield from (start, end, size)

    @staticmethod
    def _groups(state: BrokerState) -> Iterator[Metric]:
        members = GaugeMetricFamily(
            "headrace_broker_group_members", "Members of a group", labels=["group"]
        )
        states = GaugeMetricFamily(
            "headrace_broker_group_state",
            "1 for the state a group is in",
            labels=["group", "state"],
        )
        lag = GaugeMetricFamily(
            "headrace_broker_group_lag",
            "Records between a group's committed offset and the end of the partition",
            labels=["group", "topic", "partition"],
        )
        for listing in state.groups.list_groups():
            described = state.groups.describe(listing.group_id)
            members.add_metric([listing.group_id], len(described.members))
            states.add_metric([listing.group_id, described.state.value], 1)
            for tp, value in state.groups.fetch(listing.group_id, None).items():
                log = state.logs.get_log(tp.topic, tp.partition)
                if log is not None and value.offset >= 0:
                    lag.add_metric(
                        [listing.group_id, tp.topic, str(tp.partition)],
                        max(0, log.log_end_offset - value.offset),
                    )
        yield from (members, states, lag)

    @staticmethod
    def _transactions(state: BrokerState) -> Iterator[Metric]:
        now_ms = time.time() * 1000
        open_txns = [
            m
            for m in state.txn.coordinator.transactions()
            if m.start_ms >= 0 and m.state.name in ("ONGOING", "PREPARE_COMMIT", "PREPARE_ABORT")
        ]
        count = GaugeMetricFamily(
            "headrace_broker_transactions_open", "Transactions begun and not yet complete"
        )
        count.add_metric([], len(open_txns))
        oldest = GaugeMetricFamily(
            "headrace_broker_transaction_oldest_age_seconds",
            "Age of the oldest open transaction (0 when none)",
        )
        oldest.add_metric([], max(((now_ms - m.start_ms) / 1000 for m in open_txns), default=0.0))
        yield from (count, oldest)
