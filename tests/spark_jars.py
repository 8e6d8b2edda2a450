"""Spark's own Kafka source for a test's Spark session: the jars of jvm/spark/.

``spark_session(conf={"spark.jars": spark_kafka_jars()})`` makes ``format("kafka")``
Spark's spark-sql-kafka-0-10, beside this project's ``format("headrace")``, so the two
readers can be compared on the same topic. Like every JVM set (``jvm.py``), the jars
come from the set-up; a test that needs them fails, saying how to get them, when they
are missing.
"""

from __future__ import annotations

from jvm import lib_dir

SPARK_KAFKA = "spark"
"""spark-sql-kafka-0-10 4.2.0 and what it needs that pyspark does not ship."""


def spark_kafka_jars() -> str:
    """The comma-separated jar list for ``spark.jars``."""
    return ",".join(str(jar) for jar in sorted(lib_dir(SPARK_KAFKA).glob("*.jar")))
