"""Registering the data source without importing pyspark before it is needed."""

from __future__ import annotations

from typing import Any


def register_source(spark: Any) -> None:
    """Make ``spark.read.format("headrace")`` and ``readStream.format("headrace")`` work."""
    from ._source import register

    register(spark)
