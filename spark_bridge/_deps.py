"""Lazy imports of the heavy optional dependencies, with one clear error when absent.

``import headrace.spark_bridge`` must stay cheap: nothing here runs until a function that needs
Spark, Arrow or Delta is called.
"""

from __future__ import annotations

import importlib
import warnings
from types import ModuleType

from ._errors import MissingDependencyError

_EXTRA_HINT = "install the spark extra: pip install 'headrace[spark]'"


def require(module: str) -> ModuleType:
    """Import ``module`` or raise MissingDependencyError naming the extra to install."""
    try:
        with warnings.catch_warnings():
            # pyspark's import probes the pandas version and warns about pandas 3, which
            # nothing here uses; the warning would otherwise greet every CLI user.
            warnings.filterwarnings(
                "ignore", message="PySpark does not yet fully support", category=FutureWarning
            )
            return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(f"{module} is needed here; {_EXTRA_HINT}") from exc
