"""Running both halves of the pairs and comparing what they wrote.

Kafka Streams' half runs as one batch in one JVM (``KsOracle.java``), compiled at test
time against the jars of ``jvm/pom.xml``; headrace's half runs per case in its own
``TopologyTestDriver``. Both see the same records, one pipe per record, with explicit
timestamps and the record cache off.

Outputs are compared per output topic and per key, in order: Kafka Streams defines the
order of a key's records (one partition, processed in order), not the interleaving of
different keys, so that is left out of the comparison.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from ks_oracle import topologies_streams, topologies_tables  # noqa: F401 - register the pairs
from ks_oracle.differences import ALL_DIFFERENCES, Difference
from ks_oracle.inputs import Record, generate
from ks_oracle.pairs import PAIRS, Pair, S, serde

import jvm
from headrace.dsl import StreamsBuilder, Windowed
from headrace.testing import TopologyTestDriver

HERE = Path(__file__).resolve().parent
SEEDS = (1, 2, 3)
MAIN_CLASS = "KsOracle"

Row = list[Any]  # [key, value, timestamp], as JSON gives them back
Outputs = dict[str, list[Row]]


@contextmanager
def state_dir() -> Iterator[Path]:
    """A fresh folder for stores, in memory (``/dev/shm``) where the machine has one: both
    halves keep their default RocksDB stores, whose per-commit syncs cost nothing there."""
    shm = Path("/dev/shm")
    root = shm if shm.is_dir() and os.access(shm, os.W_OK) else None
    folder = Path(tempfile.mkdtemp(prefix="ks-oracle-", dir=root))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def case_name(pair_id: str, seed: int) -> str:
    return f"{pair_id}/{seed}"


def minimal_name(d: Difference) -> str:
    return f"minimal/{d.name}"


def all_cases() -> list[tuple[str, int]]:
    return [(pair_id, seed) for pair_id in PAIRS for seed in SEEDS]


def run_kafka_streams(work_dir: Path) -> dict[str, dict[str, Any]]:
    """Every case through Kafka Streams, in one JVM: ``{case name: {"outputs": ...}}``
    or ``{case name: {"error": stack trace}}``."""
    cases = []
    for pair_id, seed in all_cases():
        p = PAIRS[pair_id]
        cases.append(
            {
                "name": case_name(pair_id, seed),
                "topology": pair_id,
                "sources": {topic: source.kind for topic, source in p.sources.items()},
                "sinks": {topic: list(kinds) for topic, kinds in p.sinks.items()},
                "records": [list(r) for r in generate(p, seed)],
            }
        )
    for d in ALL_DIFFERENCES:
        p = PAIRS[d.pair]
        cases.append(
            {
                "name": minimal_name(d),
                "topology": d.pair,
                "sources": {topic: source.kind for topic, source in p.sources.items()},
                "sinks": {topic: list(kinds) for topic, kinds in p.sinks.items()},
                "records": [list(r) for r in d.records],
            }
        )
    batch, results = work_dir / "cases.json", work_dir / "results.json"
    batch.write_text(json.dumps({"cases": cases}))
    cp = jvm.compile_java(sorted(HERE.glob("*.java")), work_dir / "classes")
    with state_dir() as stores:
        jvm.run_java(MAIN_CLASS, str(batch), str(results), str(stores), cp=cp, timeout=300)
    loaded: dict[str, dict[str, Any]] = json.loads(results.read_text())
    return loaded


def render_key(key: Any) -> Any:
    if isinstance(key, Windowed):
        return f"{key.key}@{key.window.start}/{key.window.end}"
    return key


def run_headrace(
    p: Pair, records: list[Record], when: Callable[[int], int | datetime] = int
) -> Outputs:
    """The pair's headrace half over ``records``: every sink's records as ``[key, value,
    timestamp]``, keys rendered as the Kafka Streams half renders them. ``when`` turns a
    record's milliseconds into the timestamp piped (a datetime, say)."""
    builder = StreamsBuilder()
    p.build(builder)
    with (
        state_dir() as stores,
        TopologyTestDriver(
            builder.build(), {"application_id": "oracle", "state_dir": stores}, initial_wall_clock=0
        ) as driver,
    ):
        inputs = {
            topic: driver.create_input_topic(topic, S, serde(source.kind))
            for topic, source in p.sources.items()
        }
        for topic, key, value, ts in records:
            inputs[topic].pipe_input(key, value, timestamp=when(ts))
        return {
            topic: [
                [render_key(r.key), r.value, r.timestamp]
                for r in driver.create_output_topic(
                    topic, serde(kinds[0]), serde(kinds[1])
                ).read_records_to_list()
            ]
            for topic, kinds in p.sinks.items()
        }


def per_key(rows: list[Row]) -> dict[Any, list[tuple[Any, int]]]:
    by_key: defaultdict[Any, list[tuple[Any, int]]] = defaultdict(list)
    for key, value, ts in rows:
        by_key[key].append((value, ts))
    return dict(by_key)


def differences(kafka_streams: Outputs, headrace: Outputs) -> list[str]:
    """Where the two disagree: per topic and key, both sequences of ``(value, timestamp)``."""
    found = []
    for topic in sorted(set(kafka_streams) | set(headrace)):
        ks, hr = per_key(kafka_streams.get(topic, [])), per_key(headrace.get(topic, []))
        for key in sorted(set(ks) | set(hr), key=repr):
            if ks.get(key, []) != hr.get(key, []):
                found.append(
                    f"{topic} key {key!r}:\n"
                    f"  Kafka Streams {ks.get(key, [])}\n"
                    f"  headrace      {hr.get(key, [])}"
                )
    return found
