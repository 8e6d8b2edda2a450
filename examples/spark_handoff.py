"""The hand-off: windowed page-view counts exported to Delta Lake, then a Spark SQL report.

1. Create the topics (an application never creates the topics it reads or writes),
   then put sample page views on ``page-views`` (keyed by user, the view's time as the
   record timestamp), plus one view per page past the last minute's grace period so
   every sampled minute closes.
2. Run the ``examples.page_views`` topology as a service (``headrace.App`` in
   this process, in its own consumer group) until it has written one final count per
   page and minute to ``page-views-per-minute``.
3. Export that topic to a Delta table with ``headrace.spark_bridge.export_topic`` (the JSON
   fields become columns); run the export a second time to show it copies nothing
   twice.
4. Read the table into Spark and print a SQL report: views per page, the busiest
   minute of each page; check the totals against the sampled views.

    python -m headrace.examples.spark_handoff --bootstrap-servers 127.0.0.1:9092 --delta-path /tmp/ppm

The same topology runs on its own with ``headrace run examples/page_views.py:build_topology
--application-id page-views``; steps 3 and 4 are then unchanged.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import uuid
from collections import Counter
from typing import Any

from headrace import Serdes
from headrace.examples.page_views import PER_MINUTE, T0, VIEWS, build, build_topology
from headrace.testing import TestRecord, TopologyTestDriver

PAGES = ("/home", "/pricing", "/docs", "/blog", "/signup")
REPORT = """
    SELECT page,
           sum(views)              AS views,
           count(*)                AS minutes,
           max_by(minute, views)   AS busiest_minute,
           max(views)              AS peak
    FROM page_views_per_minute
    GROUP BY page
    ORDER BY views DESC, page
"""


def sample_views(n: int, minutes: int = 10, seed: int = 7) -> list[TestRecord]:
    """``n`` page views spread over ``minutes`` minutes, in time order."""
    rng = random.Random(seed)
    span = minutes * 60_000
    stamps = sorted(rng.randrange(span) for _ in range(n))
    views = []
    for ts in stamps:
        user = f"user-{rng.randrange(50)}"
        page = rng.choices(PAGES, weights=(5, 2, 3, 1, 1))[0]
        views.append(TestRecord(user, {"page": page, "user": user}, T0 + ts))
    return views


def windowed_counts(views: list[TestRecord]) -> list[tuple[str, dict[str, Any]]]:
    """Step 1: the page_views topology's final per-minute counts for ``views``."""
    with TopologyTestDriver(
        build().build(), {"application_id": "page-views"}, initial_wall_clock=T0
    ) as driver:
        driver.create_input_topic(VIEWS, Serdes.string(), Serdes.json()).pipe_records(views)
        driver.advance_wall_clock_time(120_000)  # the stream goes quiet: the last minute closes
        out = driver.create_output_topic(PER_MINUTE, Serdes.string(), Serdes.json())
        return [(kv.key, kv.value) for kv in out.read_key_values_to_list()]


GRACE_MS = 10_000  # examples.page_views accepts views up to 10 s late


def _stamp(view: TestRecord) -> int:
    assert view.timestamp is not None  # sample_views stamps every view
    return view.timestamp


def _minute_of(view: TestRecord) -> int:
    return _stamp(view) // 60_000


def create_topics(bootstrap: str, partitions: int = 1) -> None:
    """Step 1: the topology's input and output topics, where they do not exist yet.

    One partition by default: the views are published in time order, and a windowed count
    drops a view that arrives after its minute closed, which the closing views of one
    partition could do to views still queued on another."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    created = admin.create_topics([NewTopic(t, partitions, 1) for t in (VIEWS, PER_MINUTE)])
    for future in created.values():
        try:
            future.result(30)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise


def publish_views(bootstrap: str, views: list[TestRecord]) -> None:
    """Step 1: the sampled views, then a view per page that closes the last minute."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for view in views:
        producer.produce(
            VIEWS,
            key=view.key.encode(),
            value=json.dumps(view.value).encode(),
            timestamp=_stamp(view),
        )
    closer = (max(_minute_of(v) for v in views) + 1) * 60_000 + GRACE_MS + 1_000
    for page in PAGES:
        producer.produce(
            VIEWS,
            key=b"closer",
            timestamp=closer,
            value=json.dumps({"page": page, "user": "closer"}).encode(),
        )
    if producer.flush(30):
        raise RuntimeError("the views were not all acknowledged")


async def count_as_a_service(
    bootstrap: str, state_dir: str, finals: int, within: float = 120
) -> int:
    """Step 2: run the topology as a service until ``finals`` counts are on the topic."""
    from aiokafka import AIOKafkaConsumer

    from headrace import App

    app = App(
        f"page-views-handoff-{uuid.uuid4().hex[:6]}",
        build_topology,
        bootstrap_servers=bootstrap,
        state_dir=state_dir,
        commit_interval_ms=200,
        http_port=0,
        log_level="WARNING",
    )
    await app.start()
    consumer = AIOKafkaConsumer(
        PER_MINUTE,
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    seen = 0
    try:
        deadline = asyncio.get_running_loop().time() + within
        while seen < finals and asyncio.get_running_loop().time() < deadline:
            batches = await consumer.getmany(timeout_ms=500)
            seen += sum(len(records) for records in batches.values())
    finally:
        await consumer.stop()
        await app.stop()
    return seen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="windowed counts -> Delta -> Spark SQL")
    parser.add_argument("--bootstrap-servers", default="127.0.0.1:9092")
    parser.add_argument("--delta-path", required=True)
    parser.add_argument("--views", type=int, default=5_000)
    args = parser.parse_args(argv)

    from headrace.base.table import QUERY_RESULT, render_table
    from headrace.spark_bridge import export_topic, register_delta_tables, spark_session

    views = sample_views(args.views)
    finals = len({(v.value["page"], _minute_of(v)) for v in views})
    expected = Counter(v.value["page"] for v in views)
    create_topics(args.bootstrap_servers)
    publish_views(args.bootstrap_servers, views)
    print(f"[topic]   {len(views)} views on {VIEWS}")
    with tempfile.TemporaryDirectory(prefix="handoff-state-") as state_dir:
        counted = asyncio.run(count_as_a_service(args.bootstrap_servers, state_dir, finals))
    print(f"[streams] {len(views)} views -> {counted} final (page, minute) counts on {PER_MINUTE}")

    first = export_topic(args.bootstrap_servers, PER_MINUTE, args.delta_path, value_format="json")
    again = export_topic(args.bootstrap_servers, PER_MINUTE, args.delta_path, value_format="json")
    print(
        f"[delta]   exported {first.records} rows in {first.commits} commit(s);"
        f" rerun exported {again.records}"
    )

    spark = spark_session("headrace-handoff")
    spark.sparkContext.setLogLevel("ERROR")
    try:
        register_delta_tables(spark, {"page_views_per_minute": args.delta_path})
        report = spark.sql(REPORT)
        rows = report.collect()
        print("[spark]   views per page from the Delta table:")
        print(render_table(report.columns, [tuple(r) for r in rows], QUERY_RESULT))
        total = sum(r.views for r in rows)
        ok = {r.page: r.views for r in rows} == dict(expected)
        print(
            f"[check]   {total} views in the report; matches the {len(views)} views"
            f" counted directly: {ok}"
        )
    finally:
        spark.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
