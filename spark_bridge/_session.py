"""A Spark session set up for this machine's habits, with the ``headrace`` source registered.

Local mode by default; pass ``master`` (``spark://...``, ``yarn``, ``k8s://...``) and
``conf`` to point the same code at a real cluster.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

from ._deps import require

LOCAL_DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.ui.showConsoleProgress": "false",
}


def spark_session(
    app_name: str = "headrace", *, master: str | None = None, conf: Mapping[str, str] | None = None
) -> Any:
    """Get or create a session, with ``format("headrace")`` registered.

    Order matters: the environment is set before the JVM starts (it is read once), so
    workers run this interpreter, which has the project's packages, and Spark binds
    loopback in local mode.
    """
    require("pyarrow")  # Python data sources and toArrow() need it
    pyspark_sql = require("pyspark.sql")
    local = master is None or master.startswith("local")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = pyspark_sql.SparkSession.builder.appName(app_name).master(master or "local[2]")
    for key, value in {**(LOCAL_DEFAULTS if local else {}), **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    from ._source import register

    register(spark)
    return spark
