"""Prometheus metrics of one application instance, in a registry of its own.

A registry per instance keeps two apps in one process (tests, the demo) from
colliding. Rates (records per second per task) are ``rate()`` over the counters.
Counters are bumped once per batch, never per record.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest


class AppMetrics:
    def __init__(self, application_id: str) -> None:
        self.registry = CollectorRegistry()
        reg = self.registry
        self.application_id = application_id
        self.records_consumed = Counter(
            "headrace_streams_records_consumed", "Records fed to tasks", ["task"], registry=reg
        )
        self.records_produced = Counter(
            "headrace_streams_records_produced", "Records handed to the producer", ["topic"], registry=reg
        )
        self.consumer_lag = Gauge(
            "headrace_streams_consumer_lag", "Records behind the end of a source partition",
            ["topic", "partition"], registry=reg,
        )
        self.commit_latency = Histogram(
            "headrace_streams_commit_latency_seconds", "Time of one full commit",
            buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5), registry=reg,
        )
        self.commits = Counter("headrace_streams_commits", "Completed commits", registry=reg)
        self.restored_records = Counter(
            "headrace_streams_restored_records", "Changelog records restored", ["task", "store"],
            registry=reg,
        )
        self.restore_remaining = Gauge(
            "headrace_streams_restore_remaining_records", "Changelog records left to restore",
            ["task", "store"], registry=reg,
        )
        self.standby_records = Counter(
            "headrace_streams_standby_records", "Changelog records applied to standby replicas",
            ["task", "store"], registry=reg,
        )
        self.errors = Counter(
            "headrace_streams_errors", "Records that met an error, by kind and action taken",
            ["kind", "action"], registry=reg,
        )
        self.tasks = Gauge("headrace_streams_tasks", "Tasks by state", ["state"], registry=reg)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
