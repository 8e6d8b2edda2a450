"""Topologies the runtime tests run: a stateless one and a stateful counting one."""

from __future__ import annotations

from typing import Any

from headrace.dsl import Serdes, StreamsBuilder
from headrace.state import Stores
from headrace.streams import BatchProcessor, Rec, Topology

INPUT, UPPER, COUNTS = "rt-input", "rt-upper", "rt-counts"


class Upper(BatchProcessor):
    def process_batch(self, batch: list[Rec]) -> None:
        self.context.forward_batch([(k, v.upper(), ts, h, o) for k, v, ts, h, o in batch])


class Count(BatchProcessor):
    """Counts records per key in store ``counts``; emits ``key -> "count"`` per record."""

    def init(self, context: Any) -> None:
        super().init(context)
        self.store = context.get_state_store("counts")

    def process_batch(self, batch: list[Rec]) -> None:
        store = self.store
        out = []
        for k, v, ts, h, o in batch:
            n = int(store.get(k) or b"0") + 1
            store.put(k, str(n).encode())
            out.append((k, v + b"|" + str(n).encode(), ts, h, o))
        self.context.forward_batch(out)


def upper_topology(source: str = INPUT, sink: str = UPPER) -> Topology:
    return (
        Topology()
        .add_source("in", source)
        .add_processor("upper", Upper, "in")
        .add_sink("out", sink, "upper")
    )


def count_topology(source: str = INPUT, sink: str = COUNTS) -> Topology:
    return (
        Topology()
        .add_source("in", source)
        .add_processor("count", Count, "in")
        .add_state_store(Stores.key_value_store("counts"), "count")
        .add_sink("out", sink, "count")
    )


# One pair of topics per integration test, so tests sharing a broker never mix.
def count_share() -> Topology:
    return count_topology(f"{INPUT}-share", f"{COUNTS}-share")


def count_kill() -> Topology:
    return count_topology(f"{INPUT}-kill", f"{COUNTS}-kill")


def count_restart() -> Topology:
    return count_topology(f"{INPUT}-restart", f"{COUNTS}-restart")


def count_checkpoint_kill() -> Topology:
    return count_topology(f"{INPUT}-ckpt-kill", f"{COUNTS}-ckpt-kill")


def count_standby_alos() -> Topology:
    return count_topology(f"{INPUT}-count_standby_alos", f"{COUNTS}-count_standby_alos")


def count_standby_eos() -> Topology:
    return count_topology(f"{INPUT}-count_standby_eos", f"{COUNTS}-count_standby_eos")


def upper_tansu() -> Topology:
    return upper_topology(f"{INPUT}-upper", f"{UPPER}-upper")


def upper_latency() -> Topology:
    return upper_topology(f"{INPUT}-latency", f"{UPPER}-latency")


def upper_latency_eos() -> Topology:
    return upper_topology(f"{INPUT}-latency-eos", f"{UPPER}-latency-eos")


def counts_latency() -> Topology:
    """A DSL count (its store caches updates): ``key -> "count"``."""
    string = Serdes.string()
    builder = StreamsBuilder()
    (
        builder.stream(f"{INPUT}-latency-counts", key_serde=string, value_serde=string)
        .group_by_key()
        .count()
        .to_stream()
        .map_values(str)
        .to(f"{COUNTS}-latency-counts", key_serde=string, value_serde=string)
    )
    return builder.build()


# The payments job of the exactly-once tests: one pair of topics per test.
def _payments(name: str) -> Topology:
    from headrace.examples.payments import build

    return build(source=f"pay-in-{name}", sink=f"pay-out-{name}").build()


def payments_eos() -> Topology:
    return _payments("eos")


def payments_alos() -> Topology:
    return _payments("alos")


def payments_broker() -> Topology:
    return _payments("broker")


def payments_smoke() -> Topology:
    return _payments("smoke")
