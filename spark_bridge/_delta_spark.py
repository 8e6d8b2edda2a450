"""A Spark session with delta-spark: ``format("delta")``, time travel, ``MERGE INTO``.

delta-spark has two halves. The JVM half (``io.delta:delta-spark_2.13`` and
``delta-storage``) does the work; it is built for one Spark version, 4.4.0 for Spark 4.2
(on Spark 4.3 its reads fail with ``NoSuchMethodError: LogicalRDD.<init>``). The Python
half, the ``delta-spark`` package of the ``delta-spark`` extra, adds ``DeltaTable`` and
pins that pyspark. The jars are not fetched here: ``spark.jars.packages`` would reach
Maven Central on every start. They come from a folder, the first of:

1. the ``jars`` argument (``--delta-jars DIR`` of the commands);
2. the environment variable ``HEADRACE_DELTA_SPARK_JARS``;
3. a checkout's ``.jvm/lib/delta``, where ``scripts/dev`` resolves ``jvm/delta/pom.xml``.

Without them, or on a pyspark delta-spark does not run on, the session is refused with
what to install, rather than failing later inside a query.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ._deps import require
from ._errors import MissingDependencyError

DELTA_SPARK_VERSION = "4.4.0"
SPARK_VERSION = "4.2.0"
"""The pyspark ``DELTA_SPARK_VERSION``'s jars are built for."""

JARS_ENV = "HEADRACE_DELTA_SPARK_JARS"
CHECKOUT_JARS = Path(__file__).resolve().parent.parent / ".jvm" / "lib" / "delta"

DELTA_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}
LOCAL_DELTA_CONF = {
    # A table's state is rebuilt from its log in this many tasks (50 by default): on a
    # local session each costs more than the little work it holds.
    "spark.databricks.delta.snapshotPartitions": "2",
}
_NEEDED_JARS = ("delta-spark_2.13", "delta-storage")


def delta_spark_jars(folder: str | None = None) -> list[str]:
    """The jar files to put on ``spark.jars``, from the first folder of the module docstring."""
    given = folder or os.environ.get(JARS_ENV)
    where = Path(given) if given else CHECKOUT_JARS
    jars = sorted(str(j) for j in where.glob("*.jar")) if where.is_dir() else []
    missing = [name for name in _NEEDED_JARS if not any(f"/{name}-" in j for j in jars)]
    if missing:
        coordinates = ", ".join(f"io.delta:{name}:{DELTA_SPARK_VERSION}" for name in missing)
        raise MissingDependencyError(
            f"delta-spark's jars are not in {where} (missing {coordinates}): in a checkout,"
            f" `mvn -f jvm/pom.xml dependency:copy-dependencies` puts them in {CHECKOUT_JARS};"
            f" elsewhere download them and give their folder with --delta-jars or {JARS_ENV}"
        )
    return jars


def check_pyspark() -> None:
    """Refuse a pyspark the delta-spark jars do not run on."""
    version = require("pyspark").__version__
    if version != SPARK_VERSION:
        raise MissingDependencyError(
            f"delta-spark {DELTA_SPARK_VERSION} runs on pyspark {SPARK_VERSION}, this is"
            f" pyspark {version}: install the delta-spark extra, pip install"
            f" 'headrace[delta-spark]', in an environment of its own"
        )


def delta_spark_session(
    app_name: str = "headrace-delta",
    *,
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    jars: str | None = None,
) -> Any:
    """A session (see ``spark_session``) that reads and writes ``format("delta")``.

    In order: check pyspark's version; find the jars (``jars`` names their folder);
    start or join the session with them, Delta's SQL extension and its catalog, which
    ``VERSION AS OF``, ``MERGE INTO`` and ``delta.`path``` need. A session that was
    already running keeps its own jars: start this one first.
    """
    check_pyspark()
    found = delta_spark_jars(jars)
    local = master is None or master.startswith("local")
    settings = {**DELTA_CONF, **(LOCAL_DELTA_CONF if local else {}), **(conf or {})}
    settings["spark.jars"] = ",".join(j for j in (settings.get("spark.jars"), *found) if j)
    from ._session import spark_session

    return spark_session(app_name, master=master, conf=settings)
