"""PySpark data source over Kafka-protocol topics and the exactly-once Delta Lake hand-off.

    spark = spark_session()                       # local; registers format("headrace")
    frame = (spark.read.format("headrace")
             .option("kafka.bootstrap.servers", "127.0.0.1:9092")
             .option("subscribe", "page-views").load())
    export_topic("127.0.0.1:9092", "page-views", "/data/page_views")   # no Spark needed
    read_delta(spark, "/data/page_views").createOrReplaceTempView("page_views")

Any Spark session finds ``format("headrace")`` on its own: PySpark 4 loads the
``DefaultSource`` of the installed ``pyspark_headrace`` module. ``register_source`` and
``spark_session`` register it explicitly, for sessions that cannot see that module.

pyspark, pyarrow and deltalake (the ``spark`` extra) are imported only when used, so
importing this package is cheap. ``HeadraceDataSource`` is resolved on first access.
"""

from typing import Any

from headrace.base import BrokerError as BrokerError

from ._delta import DeltaSink as DeltaSink
from ._delta_spark import delta_spark_session as delta_spark_session
from ._delta_spark_export import DeltaSparkExport as DeltaSparkExport
from ._delta_spark_export import StreamExportResult as StreamExportResult
from ._errors import BrokerRequestError as BrokerRequestError
from ._errors import DecodeError as DecodeError
from ._errors import DeltaError as DeltaError
from ._errors import MissingDependencyError as MissingDependencyError
from ._errors import OffsetRangeError as OffsetRangeError
from ._errors import OptionError as OptionError
from ._errors import SparkBridgeError as SparkBridgeError
from ._errors import UnsupportedTableError as UnsupportedTableError
from ._export import Commit as Commit
from ._export import ExportJob as ExportJob
from ._export import ExportResult as ExportResult
from ._export import ExportState as ExportState
from ._export import export_topic as export_topic
from ._json import decode_json as decode_json
from ._json import json_values_to_arrow as json_values_to_arrow
from ._json import spark_schema as spark_schema
from ._offsets import OffsetRange as OffsetRange
from ._offsets import TopicPartition as TopicPartition
from ._readback import read_delta as read_delta
from ._readback import register_delta_tables as register_delta_tables
from ._register import register_source as register_source
from ._registry_values import decode_registry as decode_registry
from ._session import spark_session as spark_session

__all__ = [
    "BrokerError",
    "BrokerRequestError",
    "Commit",
    "DecodeError",
    "DeltaError",
    "DeltaSink",
    "DeltaSparkExport",
    "ExportJob",
    "ExportResult",
    "ExportState",
    "HeadraceDataSource",
    "MissingDependencyError",
    "OffsetRange",
    "OffsetRangeError",
    "OptionError",
    "SparkBridgeError",
    "StreamExportResult",
    "TopicPartition",
    "UnsupportedTableError",
    "decode_json",
    "decode_registry",
    "delta_spark_session",
    "export_topic",
    "json_values_to_arrow",
    "read_delta",
    "register_delta_tables",
    "register_source",
    "spark_schema",
    "spark_session",
]


def __getattr__(name: str) -> Any:
    if name == "HeadraceDataSource":  # importing it imports pyspark
        from ._source import HeadraceDataSource

        return HeadraceDataSource
    raise AttributeError(f"module 'headrace.spark_bridge' has no attribute {name!r}")
