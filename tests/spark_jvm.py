"""JVM options for the tests' Spark JVMs: the C1 compiler only and the serial collector.

A test's Spark JVM (a driver, an executor, a standalone master or worker) lives for
seconds to a few minutes and spends most of its CPU starting: loading classes and
compiling them. By default HotSpot also runs C2, its optimising compiler, on code that
stays hot, in background threads that on a small shared machine take the cores the tests
need. ``-XX:TieredStopAtLevel=1`` stops at C1, which compiles quickly; the serial
collector spares the parallel one's threads. Spark computes the same either way: the
same classes and plans, compiled with less optimisation. A session started, a
200,000-row aggregation run and the session stopped took 26-28 s of CPU with the default
options and 15 s with these (on 2 busy cores). The Kafka JVMs of ``jvm.py`` run the same way.

Where each JVM reads them:
- a driver started by ``spark-submit`` (PySpark starts its JVM that way too):
  ``SPARK_SUBMIT_OPTS`` in its environment, or ``spark.driver.extraJavaOptions`` in the
  session's conf when this process starts the JVM;
- executors (``local-cluster``, a standalone cluster): ``spark.executor.extraJavaOptions``;
- a standalone master and its workers: ``SPARK_DAEMON_JAVA_OPTS``;
- the small launcher JVM each ``spark-class`` runs first: ``SPARK_LAUNCHER_OPTS``.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping

QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

QUICK_SPARK_CONF = {
    "spark.driver.extraJavaOptions": QUICK_JVM,
    "spark.executor.extraJavaOptions": QUICK_JVM,
}
"""For ``spark_session(conf=...)`` and ``spark-submit --conf``."""


def quick_spark_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` for a process that starts Spark: its drivers, daemons and launchers run
    with ``QUICK_JVM``; a PySpark program's executors too (``PYSPARK_SUBMIT_ARGS``, which
    PySpark hands to the ``spark-submit`` that starts its JVM)."""
    quick = dict(env)
    for name in ("SPARK_SUBMIT_OPTS", "SPARK_DAEMON_JAVA_OPTS", "SPARK_LAUNCHER_OPTS"):
        quick[name] = f"{quick.get(name, '')} {QUICK_JVM}".strip()
    executors = f"spark.executor.extraJavaOptions={QUICK_JVM}"
    quick["PYSPARK_SUBMIT_ARGS"] = f"--conf {shlex.quote(executors)} pyspark-shell"
    return quick
