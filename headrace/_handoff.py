"""The demo's last stage: hand the page-view counts to Delta Lake and report with Spark.

1. Export the services' per-minute counts topic to a Delta table with
   ``spark_bridge.export_topic``, starting where the topic stood when this run began
   (so a shared broker's older data stays out); each Delta commit records the offsets
   it covers, so the export is exactly once.
2. Export again: the table already covers every offset, so nothing is written.
3. Read the table into a local Spark session and run a SQL report: views per page and
   each page's busiest minute; check the totals against what the demo generated.

Blocking (Spark and the export are synchronous): the demo runs it in a worker thread.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

REPORT = """
    SELECT page,
           sum(views)            AS views,
           count(*)              AS minutes,
           max_by(minute, views) AS busiest_minute,
           max(views)            AS peak
    FROM page_views_per_minute
    WHERE minute IN ({minutes})
    GROUP BY page
    ORDER BY views DESC, page
"""


def hand_off(
    bootstrap: str,
    topic: str,
    start_offsets: Mapping[int, int],
    delta_path: str,
    expected: Mapping[tuple[str, str], int],
) -> bool:
    """Run the three steps; True when Spark's totals equal ``expected`` per page."""
    try:
        from headrace.spark_bridge import export_topic, register_delta_tables
    except ImportError as exc:  # the spark extra is optional for the rest of headrace
        print(f"[spark]    skipped: {exc} (install headrace[spark])")
        return False

    starting = json.dumps({topic: {str(p): o for p, o in start_offsets.items()}})
    first = export_topic(bootstrap, topic, delta_path, starting=starting, value_format="json")
    again = export_topic(bootstrap, topic, delta_path, starting=starting, value_format="json")
    print(
        f"[delta]    {first.records} per-minute counts exported to {delta_path}"
        f" in {first.commits} commit(s); a rerun exported {again.records}"
    )

    totals_match = spark_report(
        lambda spark: register_delta_tables(spark, {"page_views_per_minute": delta_path}),
        expected,
    )
    return again.records == 0 and totals_match


def spark_report(register: Callable[[Any], None], expected: Mapping[tuple[str, str], int]) -> bool:
    """Step 3: in a local Spark session, ``register`` makes the view
    ``page_views_per_minute`` (page, minute, views); then the report runs over it and is
    printed. True when its views per page equal ``expected``'s."""
    from headrace.base.table import QUERY_RESULT, render_table
    from headrace.spark_bridge import spark_session

    spark = spark_session("headrace-demo")
    spark.sparkContext.setLogLevel("ERROR")
    try:
        register(spark)
        minutes = ", ".join(f"'{m}'" for m in sorted({m for _p, m in expected}))
        report = spark.sql(REPORT.format(minutes=minutes))
        rows: list[Any] = report.collect()
    finally:
        spark.stop()
    print("[spark]    SQL over the Delta table: views per page")
    print(
        "\n".join(
            "           " + line
            for line in render_table(
                report.columns, [tuple(r) for r in rows], QUERY_RESULT
            ).splitlines()
        )
    )
    per_page: Counter[str] = Counter()
    for (page, _minute), n in expected.items():
        per_page[page] += n
    ok = {r.page: r.views for r in rows} == dict(per_page)
    print(f"[spark]    totals {'match' if ok else 'DO NOT MATCH'} the generated views")
    return ok
