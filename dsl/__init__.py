"""The declarative DSL: StreamsBuilder, KStream and serdes.

Stateless operators of :class:`KStream`: ``filter``, ``filter_not``, ``map``,
``map_values``, ``flat_map``, ``flat_map_values``, ``select_key``, ``peek``,
``foreach``, ``print``, ``split`` (with ``branch``/``default_branch``), ``merge``,
``repartition``, ``to``, and ``process`` for processor-API processors. Names follow
Kafka Streams in snake_case.
"""

from ._branched import BranchedKStream as BranchedKStream
from ._builder import StreamsBuilder as StreamsBuilder
from ._errors import DeserializationError as DeserializationError
from ._errors import DslError as DslError
from ._errors import SerdeError as SerdeError
from ._errors import SerializationError as SerializationError
from ._errors import TopologyBuildError as TopologyBuildError
from ._kstream import KStream as KStream
from ._serdes import Serde as Serde
from ._serdes import Serdes as Serdes

__all__ = [
    "BranchedKStream",
    "DeserializationError",
    "DslError",
    "KStream",
    "Serde",
    "SerdeError",
    "Serdes",
    "SerializationError",
    "StreamsBuilder",
    "TopologyBuildError",
]
