"""The hand-off: windowed page-view counts exported to Delta Lake, then a Spark SQL report.

1. Count page views per page and minute with the windowed-count topology of
   ``examples.page_views`` (one final count per page and minute).
2. Put those counts on the topic ``page-views-per-minute`` of a broker, keyed by page,
   as JSON -- what the streams app writes when it runs as a service.
3. Export the topic to a Delta table with ``spark_bridge.export_topic`` (the JSON
   fields become columns); run the export a second time to show it copies nothing
   twice.
4. Read the table into Spark and print a SQL report: views per page, the busiest
   minute of each page.

What this shows honestly: step 1 runs the real topology, but through
``TopologyTestDriver`` in this process, and step 2 produces its output to the broker.
Under the streams runtime (``headrace run examples/page_views.py:build_topology
--application-id page-views``) the app writes the same topic itself, and steps 3 and 4
are unchanged.

    python -m examples.spark_handoff --bootstrap-servers 127.0.0.1:9092 --delta-path /tmp/ppm
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from typing import Any

from dsl import Serdes
from examples.page_views import PER_MINUTE, T0, VIEWS, build
from streams.testing import TestRecord, TopologyTestDriver

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
    with TopologyTestDriver(build().build(), {"application_id": "page-views"},
                            initial_wall_clock=T0) as driver:
        driver.create_input_topic(VIEWS, Serdes.string(), Serdes.json()).pipe_records(views)
        driver.advance_wall_clock_time(120_000)  # the stream goes quiet: the last minute closes
        out = driver.create_output_topic(PER_MINUTE, Serdes.string(), Serdes.json())
        return [(kv.key, kv.value) for kv in out.read_key_values_to_list()]


def publish(bootstrap: str, counts: list[tuple[str, dict[str, Any]]]) -> None:
    """Step 2: the counts onto the broker, as the running app would write them."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for page, report in counts:
        producer.produce(PER_MINUTE, key=page.encode(), value=json.dumps(report).encode())
    if producer.flush(30):
        raise RuntimeError("the counts were not all acknowledged")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="windowed counts -> Delta -> Spark SQL")
    parser.add_argument("--bootstrap-servers", default="127.0.0.1:9092")
    parser.add_argument("--delta-path", required=True)
    parser.add_argument("--views", type=int, default=5_000)
    args = parser.parse_args(argv)

    from spark_bridge import export_topic, register_delta_tables, spark_session
    from spark_bridge._table import render_table

    views = sample_views(args.views)
    counts = windowed_counts(views)
    expected = Counter(v.value["page"] for v in views)
    print(f"[streams] {len(views)} views -> {len(counts)} final (page, minute) counts")
    publish(args.bootstrap_servers, counts)
    print(f"[topic]   {len(counts)} counts on {PER_MINUTE}")

    first = export_topic(args.bootstrap_servers, PER_MINUTE, args.delta_path,
                         value_format="json")
    again = export_topic(args.bootstrap_servers, PER_MINUTE, args.delta_path,
                         value_format="json")
    print(f"[delta]   exported {first.records} rows in {first.commits} commit(s);"
          f" rerun exported {again.records}")

    spark = spark_session("headrace-handoff")
    spark.sparkContext.setLogLevel("ERROR")
    try:
        register_delta_tables(spark, {"page_views_per_minute": args.delta_path})
        report = spark.sql(REPORT)
        rows = report.collect()
        print("[spark]   views per page from the Delta table:")
        print(render_table(report.columns, [tuple(r) for r in rows]))
        total = sum(r.views for r in rows)
        ok = {r.page: r.views for r in rows} == dict(expected)
        print(f"[check]   {total} views in the report; matches the {len(views)} views"
              f" counted directly: {ok}")
    finally:
        spark.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
