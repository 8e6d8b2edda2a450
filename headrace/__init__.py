"""headrace: stream processing in the Kafka Streams mould, for Python.

The public surface a topology needs is importable from here::

    from headrace import App, Serdes, StreamsBuilder, TimeWindows, materialized

and the test driver from :mod:`headrace.testing`. The layers live in sub-packages
(``headrace.dsl``, ``headrace.streams``, ``headrace.state``, ``headrace.log_broker``,
``headrace.transactions``, ``headrace.spark_bridge``); their own paths keep working.

The names here load on first use, so ``headrace broker`` and ``headrace.log_broker`` do not
import the application side (the DSL, the runtime, aiokafka) just by importing ``headrace``.
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from headrace.dsl import AgentApp as AgentApp
    from headrace.dsl import AgentStream as AgentStream
    from headrace.dsl import AgentTopic as AgentTopic
    from headrace.dsl import FixedKeyProcessor as FixedKeyProcessor
    from headrace.dsl import JoinWindows as JoinWindows
    from headrace.dsl import Serdes as Serdes
    from headrace.dsl import SessionWindows as SessionWindows
    from headrace.dsl import SlidingWindows as SlidingWindows
    from headrace.dsl import StreamsBuilder as StreamsBuilder
    from headrace.dsl import Table as Table
    from headrace.dsl import TimeWindows as TimeWindows
    from headrace.dsl import ValueTransformerWithKey as ValueTransformerWithKey
    from headrace.dsl import materialized as materialized
    from headrace.streams import AsyncOptions as AsyncOptions
    from headrace.streams import AsyncProcessor as AsyncProcessor
    from headrace.streams import Topology as Topology
    from headrace.streams.runtime import App as App

# Where each public name is defined.
_HOMES = {
    "AgentApp": "headrace.dsl",
    "AgentStream": "headrace.dsl",
    "AgentTopic": "headrace.dsl",
    "App": "headrace.streams.runtime",
    "AsyncOptions": "headrace.streams",
    "AsyncProcessor": "headrace.streams",
    "FixedKeyProcessor": "headrace.dsl",
    "JoinWindows": "headrace.dsl",
    "Serdes": "headrace.dsl",
    "SessionWindows": "headrace.dsl",
    "SlidingWindows": "headrace.dsl",
    "StreamsBuilder": "headrace.dsl",
    "Table": "headrace.dsl",
    "TimeWindows": "headrace.dsl",
    "Topology": "headrace.streams",
    "ValueTransformerWithKey": "headrace.dsl",
    "materialized": "headrace.dsl",
}

__all__ = [*_HOMES, "__version__"]

try:
    __version__ = version("headrace")
except PackageNotFoundError:  # run from a checkout that was never installed
    __version__ = "0+unknown"


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'headrace' has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
