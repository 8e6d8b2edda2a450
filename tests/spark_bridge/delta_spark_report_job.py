"""The demo's report on ``format("delta")``, run by ``test_delta_spark_export.py`` in
.venv-delta-spark (pyspark 4.2.0 with delta-spark), over a table the delta-rs export wrote::

    python delta_spark_report_job.py TABLE_PATH JARS_DIR MINUTES_JSON CORRECTION_JSON OUT_JSON

In order, in one session with delta-spark: the demo's report (``headrace._handoff.REPORT``)
through ``headrace spark sql --engine delta-spark``; the same report read at version 0
(``versionAsOf``, and SQL's ``VERSION AS OF``); a ``MERGE`` of corrected counts through
delta-spark's ``DeltaTable``; the report after it, and once more at the version before it.
Writes the answers to OUT_JSON.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import sys
from typing import Any

from headrace import cli
from headrace._handoff import REPORT
from headrace.spark_bridge._delta_spark import delta_spark_session


def views_per_page(rows: list[Any]) -> dict[str, int]:
    return {r.page: int(r.views) for r in rows}


def main(path: str, jars: str, minutes: list[str], correction: dict[str, Any], out: str) -> None:
    spark = delta_spark_session("delta-spark-report", jars=jars)
    spark.sparkContext.setLogLevel("ERROR")
    report = REPORT.format(minutes=", ".join(f"'{m}'" for m in minutes))
    answers: dict[str, Any] = {}

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        answers["cli_status"] = cli.main(
            [
                "spark",
                "sql",
                "--engine",
                "delta-spark",
                "--delta-jars",
                jars,
                "--table",
                f"page_views_per_minute={path}",
                report,
            ]
        )
    answers["cli_output"] = printed.getvalue()

    def report_at(version: int | None) -> dict[str, int]:
        reader = spark.read.format("delta")
        if version is not None:
            reader = reader.option("versionAsOf", version)
        reader.load(path).createOrReplaceTempView("page_views_per_minute")
        return views_per_page(spark.sql(report).collect())

    answers["latest"] = report_at(None)
    answers["version_0"] = report_at(0)
    answers["sql_version_0_rows"] = spark.sql(
        f"SELECT count(*) AS n FROM delta.`{path}` VERSION AS OF 0"
    ).collect()[0]["n"]

    # delta-spark's Python half: only .venv-delta-spark has it (the type check does not)
    delta_tables = importlib.import_module("delta.tables")
    table = delta_tables.DeltaTable.forPath(spark, path)
    before_merge = table.history(1).collect()[0]["version"]
    fixes = spark.createDataFrame(correction["rows"], "page string, minute string, views long")
    (
        table.alias("t")
        .merge(fixes.alias("s"), "t.page = s.page AND t.minute = s.minute")
        .whenMatchedUpdate(set={"views": "s.views"})
        .whenNotMatchedInsert(values={"page": "s.page", "minute": "s.minute", "views": "s.views"})
        .execute()
    )
    answers["merge_operation"] = table.history(1).collect()[0]["operation"]
    answers["after_merge"] = report_at(None)
    answers["before_merge"] = report_at(before_merge)
    spark.stop()
    with open(out, "w") as f:
        json.dump(answers, f)


if __name__ == "__main__":
    main(
        sys.argv[1],
        sys.argv[2],
        json.loads(sys.argv[3]),
        json.loads(sys.argv[4]),
        sys.argv[5],
    )
