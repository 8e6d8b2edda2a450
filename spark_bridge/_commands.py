"""``headrace spark export|sql``: the hand-off job and SQL over Delta tables.

``export`` needs no Spark (librdkafka, Arrow, delta-rs); ``sql`` starts a session,
local by default, or on ``--master`` for a real cluster. ``--engine delta-spark`` does
either through delta-spark instead: the export as a Structured Streaming job, SQL with
``format("delta")`` (time travel, ``MERGE INTO``); it needs the delta-spark extra.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ._errors import OptionError
from ._export import ENGINES, VALUE_FORMATS


def register(subparsers: Any, broker_options: argparse.ArgumentParser) -> None:
    spark = subparsers.add_parser("spark", help="hand topics over to Delta Lake and Spark SQL")
    actions = spark.add_subparsers(dest="action", metavar="ACTION", required=True)

    export = actions.add_parser(
        "export",
        parents=[broker_options],
        help="copy a topic into a Delta table, exactly once; rerun to copy what is new",
    )
    # TOPIC as produce and consume take it; --topic as before (and as Kafka's tools).
    export.add_argument("topic", nargs="?", metavar="TOPIC", help="the topic to copy")
    export.add_argument("--topic", dest="topic_flag", metavar="TOPIC", help="the same as TOPIC")
    export.add_argument("--delta-path", required=True, metavar="PATH")
    export.add_argument(
        "--from",
        dest="starting",
        default="earliest",
        metavar="earliest|latest|JSON",
        help="where partitions the table has no record of start",
    )
    export.add_argument(
        "--value-format",
        choices=VALUE_FORMATS,
        default="binary",
        help="json, avro, protobuf, json-schema: store the value's fields "
        "as columns (the last three through the schema registry)",
    )
    export.add_argument(
        "--schema-registry-url",
        metavar="URL",
        default=os.environ.get("HEADRACE_SCHEMA_REGISTRY_URL", "http://127.0.0.1:8081"),
    )
    export.add_argument(
        "--app-id",
        default="headrace-export",
        help="names the offsets recorded in the table (one writer per id)",
    )
    export.add_argument(
        "--isolation-level",
        default="read_committed",
        choices=("read_committed", "read_uncommitted"),
    )
    export.add_argument(
        "--commit-records", type=int, default=500_000, metavar="N", help="rows per Delta commit"
    )
    export.add_argument(
        "--timeout",
        type=float,
        default=15.0,
        metavar="SECONDS",
        help="how long to wait for the broker to answer (default %(default)g)",
    )
    export.add_argument("--no-progress", action="store_true", help="no progress bar")
    _engine_options(export)
    export.add_argument(
        "--checkpoint",
        metavar="PATH",
        help="delta-spark: the streaming checkpoint (default PATH/_checkpoints/APP_ID)",
    )
    export.set_defaults(handler=_export)

    sql = actions.add_parser("sql", help="run a Spark SQL query over Delta tables")
    sql.add_argument("query")
    sql.add_argument(
        "--table",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="expose the Delta table at PATH as NAME (repeatable)",
    )
    sql.add_argument("--master", default=None, help="Spark master (default local[2])")
    sql.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    sql.add_argument("--max-rows", type=int, default=1000)
    _engine_options(sql)
    sql.set_defaults(handler=_sql)


def _engine_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="delta-rs",
        help="delta-rs (default, no JVM jars) or delta-spark (the delta-spark extra)",
    )
    parser.add_argument(
        "--delta-jars",
        metavar="DIR",
        help="delta-spark: the folder of its jars (default $HEADRACE_DELTA_SPARK_JARS,"
        " else a checkout's .jvm/lib/delta)",
    )


def _pairs(items: list[str], what: str) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise OptionError(f"{what} expects NAME=VALUE, got {item!r}")
        out[name] = value
    return out


def _command_config(args: argparse.Namespace) -> dict[str, str] | None:
    """librdkafka settings from ``--command-config`` (Kafka client properties)."""
    if not args.command_config:
        return None
    from headrace.base import read_properties

    from ._options import librdkafka_config

    return librdkafka_config(read_properties(args.command_config))


def _export_topic(args: argparse.Namespace) -> str:
    given: set[str] = {t for t in (args.topic, args.topic_flag) if t is not None}
    if len(given) != 1:
        error = OptionError(
            "give the topic once: TOPIC or --topic TOPIC"
            if given
            else "give the topic: TOPIC or --topic TOPIC"
        )
        error.exit_status = 2  # type: ignore[attr-defined]  # a usage error, as argparse's
        raise error
    return given.pop()


def _export(args: argparse.Namespace) -> int:
    from headrace.base.progress import ProgressBar

    from ._export import ExportJob

    args.topic = _export_topic(args)
    if args.engine == "delta-spark":
        return _export_delta_spark(args)
    if args.checkpoint is not None or args.delta_jars is not None:
        raise OptionError("--checkpoint and --delta-jars are for --engine delta-spark")
    bar: ProgressBar | None = None

    def progress(n: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = ProgressBar(total, label=f"{args.topic} ")
        bar.advance(n)

    job = ExportJob(
        args.bootstrap_servers,
        args.topic,
        args.delta_path,
        starting=args.starting,
        value_format=args.value_format,
        schema_registry_url=args.schema_registry_url,
        app_id=args.app_id,
        isolation_level=args.isolation_level,
        commit_records=args.commit_records,
        timeout=args.timeout,
        on_progress=None if args.no_progress or not sys.stderr.isatty() else progress,
        client_config=_command_config(args),
    )
    result = job.run()
    if bar is not None:
        bar.finish()
    if not result.ranges:
        print(f"{args.topic}: nothing new; {args.delta_path} is up to date")
        return 0
    rate = result.records / result.seconds if result.seconds else 0.0
    print(
        f"{args.topic}: {result.records:,} records in {result.commits} commit(s)"
        f" to {args.delta_path} in {result.seconds:.2f}s ({rate:,.0f} rec/s)"
    )
    return 0


def _export_delta_spark(args: argparse.Namespace) -> int:
    from headrace.base import read_properties

    from ._delta_spark_export import DeltaSparkExport

    if args.value_format != "binary":
        raise OptionError(
            "--engine delta-spark stores values as they are (binary);"
            f" --value-format {args.value_format} is the delta-rs engine's"
        )
    job = DeltaSparkExport(
        args.bootstrap_servers,
        args.topic,
        args.delta_path,
        starting=args.starting,
        app_id=args.app_id,
        isolation_level=args.isolation_level,
        commit_records=args.commit_records,
        checkpoint=args.checkpoint,
        # the Java client's keys, as format("headrace") takes them (kafka.-prefixed)
        client_options=read_properties(args.command_config) if args.command_config else None,
        jars=args.delta_jars,
    )
    result = job.run()
    if not result.batches:
        print(f"{args.topic}: nothing new; {args.delta_path} is up to date")
        return 0
    rate = result.records / result.seconds if result.seconds else 0.0
    print(
        f"{args.topic}: {result.records:,} records in {result.batches} micro-batch(es)"
        f" to {args.delta_path} through delta-spark in {result.seconds:.2f}s ({rate:,.0f} rec/s)"
    )
    return 0


def _sql(args: argparse.Namespace) -> int:
    from headrace.base.table import QUERY_RESULT, render_table

    from ._deps import require
    from ._readback import register_delta_tables
    from ._session import spark_session

    tables = _pairs(args.table, "--table")
    conf = _pairs(args.conf, "--conf")
    if args.engine != "delta-spark" and args.delta_jars is not None:
        raise OptionError("--delta-jars is for --engine delta-spark")
    existing = require("pyspark.sql").SparkSession.getActiveSession()
    if args.engine == "delta-spark":
        from ._delta_spark import delta_spark_session

        spark = delta_spark_session(
            "headrace-sql", master=args.master, conf=conf, jars=args.delta_jars
        )
    else:
        spark = spark_session("headrace-sql", master=args.master, conf=conf)
    try:
        spark.sparkContext.setLogLevel("ERROR")
        if args.engine == "delta-spark":
            for name, path in tables.items():
                spark.read.format("delta").load(path).createOrReplaceTempView(name)
        else:
            register_delta_tables(spark, tables)
        frame = spark.sql(args.query)
        rows = frame.limit(args.max_rows + 1).collect()
        print(render_table(frame.columns, [tuple(r) for r in rows[: args.max_rows]], QUERY_RESULT))
        if len(rows) > args.max_rows:
            print(f"(first {args.max_rows} rows shown)")
    finally:
        if existing is None:  # a session this command started; one it joined stays up
            spark.stop()
    return 0
