"""Registering the data source without importing pyspark before it is needed."""

from __future__ import annotations

from typing import Any


def register_source(spark: Any) -> None:
    """Make ``format("headrace")`` work for reads and writes, batch and streaming."""
    from ._source import register

    register(spark)
