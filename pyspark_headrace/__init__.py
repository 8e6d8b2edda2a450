"""Spark's hook for ``format("headrace")``: nothing to call, nothing to register.

When a session first needs a Python data source, PySpark 4 (``pyspark.sql.worker.
lookup_data_sources``) walks ``pkgutil.iter_modules()`` in a Python worker, imports every
top-level module whose name starts with ``pyspark_``, and registers its ``DefaultSource``
under ``DefaultSource.name()``. This module is that hook; the data source itself lives in
``headrace.spark_bridge``.

``DefaultSource`` is resolved on first access (PEP 562), so importing this module imports
neither pyspark nor the bridge: only Spark's lookup, which already runs inside pyspark,
pays for it. If the bridge cannot be imported there (a pyspark older than the ``spark``
extra asks for), the attribute is reported missing rather than raising: Spark's lookup
catches only that, and any other error would make every Python data source of the
session unavailable, not just this one.
"""

from typing import Any

__all__ = ["DefaultSource"]


def __getattr__(name: str) -> Any:
    if name == "DefaultSource":
        try:
            from headrace.spark_bridge._source import HeadraceDataSource
        except ImportError as exc:
            raise AttributeError(f"format('headrace') is unavailable: {exc}") from exc
        return HeadraceDataSource
    raise AttributeError(f"module 'pyspark_headrace' has no attribute {name!r}")
