"""Delta tables back into Spark without the delta-spark jars.

delta-rs resolves the snapshot (which Parquet files make up a version); Spark reads
those files. That is exactly a Delta read as long as the table needs no reader
feature beyond plain files: deletion vectors and column mapping are refused rather
than silently read wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._deps import require
from ._errors import DeltaError, UnsupportedTableError

_UNSUPPORTED_READER_FEATURES = {"deletionVectors", "columnMapping", "v2Checkpoint"}


def read_delta(
    spark: Any,
    path: str,
    *,
    version: int | None = None,
    storage_options: dict[str, str] | None = None,
) -> Any:
    """A DataFrame of the table at ``path`` (its latest version, or ``version``).

    In order: load the snapshot; refuse reader features files alone cannot honour;
    list its files; read them with the table's own schema (so an empty table still
    has its columns), recovering partition columns from the Hive-style directories.
    """
    deltalake = require("deltalake")
    try:
        table = deltalake.DeltaTable(path, version=version, storage_options=storage_options)
    except deltalake.exceptions.TableNotFoundError as exc:
        raise DeltaError(f"no Delta table at {path}") from exc
    features = set(table.protocol().reader_features or ())
    blocked = features & _UNSUPPORTED_READER_FEATURES
    mapping = table.metadata().configuration.get("delta.columnMapping.mode", "none")
    if blocked or mapping not in (None, "none"):
        raise UnsupportedTableError(
            f"{path} uses {sorted(blocked) or ['columnMapping']}; read it with delta-spark"
        )
    arrow_schema = require("pyarrow").schema(table.schema().to_arrow())
    files = table.file_uris()
    if not files:
        return spark.createDataFrame(arrow_schema.empty_table())
    spark_schema = spark.createDataFrame(arrow_schema.empty_table()).schema
    reader = spark.read.schema(spark_schema)
    if table.metadata().partition_columns:
        reader = reader.option("basePath", table.table_uri)
    return reader.parquet(*files)


def register_delta_tables(spark: Any, tables: Mapping[str, str]) -> None:
    """Make each ``name -> path`` queryable in SQL as a temporary view."""
    for name, path in tables.items():
        read_delta(spark, path).createOrReplaceTempView(name)
