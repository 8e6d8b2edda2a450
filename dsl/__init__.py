"""The declarative DSL: StreamsBuilder, KStream, KTable, windows and serdes.

Stateless operators of :class:`KStream`: ``filter``, ``filter_not``, ``map``,
``map_values``, ``flat_map``, ``flat_map_values``, ``select_key``, ``peek``,
``foreach``, ``print``, ``split`` (with ``branch``/``default_branch``), ``merge``,
``repartition``, ``to``, ``to_table``, ``process`` for processor-API processors and
``process_values`` for key-preserving ones (:class:`FixedKeyProcessor`), which leave
the stream partitioned as it was.

Stateful operators: ``group_by_key``/``group_by`` give a :class:`KGroupedStream` with
``count``, ``reduce``, ``aggregate``, ``windowed_by`` (:class:`TimeWindows`,
:class:`SlidingWindows`, :class:`SessionWindows`) and ``cogroup`` (several grouped
streams into one aggregate, :class:`CogroupedKStream`); tables come from
``StreamsBuilder.table``, ``KStream.to_table`` or an aggregation, and offer ``filter``,
``filter_not``, ``map_values``, ``transform_values`` (:class:`ValueTransformerWithKey`),
``to_stream``, ``group_by`` and ``suppress`` (``until_window_closes``,
``until_time_limit`` with a :class:`BufferConfig`). Stores are chosen with
:func:`materialized`. Names follow Kafka Streams in snake_case.

Joins: ``KStream.join``/``left_join``/``outer_join`` with another stream within
:class:`JoinWindows`; ``KStream.join``/``left_join`` with a :class:`KTable` (a lookup
by key) or a :class:`GlobalKTable` (``StreamsBuilder.global_table``, by a selected key);
``KTable.join``/``left_join``/``outer_join`` with another table, and ``KTable.join``/
``left_join`` by a foreign key. Joins that need co-partitioned inputs repartition a side
whose key changed upstream.

Serdes: internal topics and stores given no serde use the self-describing
``Serdes.auto()``; a ``to()`` needs a serde for each side the program computed, or the
App's default (``_serde_roles``).
"""

from headrace.state import Window as Window
from headrace.state import Windowed as Windowed

from ._agent_runner import AgentStream as AgentStream
from ._agent_tables import Table as Table
from ._agents import AgentApp as AgentApp
from ._agents import AgentTopic as AgentTopic
from ._branched import BranchedKStream as BranchedKStream
from ._builder import StreamsBuilder as StreamsBuilder
from ._cogroup import CogroupedKStream as CogroupedKStream
from ._cogroup import SessionWindowedCogroupedKStream as SessionWindowedCogroupedKStream
from ._cogroup import TimeWindowedCogroupedKStream as TimeWindowedCogroupedKStream
from ._errors import DeserializationError as DeserializationError
from ._errors import DslError as DslError
from ._errors import SerdeError as SerdeError
from ._errors import SerializationError as SerializationError
from ._errors import SerializerError as SerializerError
from ._errors import TopologyBuildError as TopologyBuildError
from ._fixed_key import FixedKeyProcessor as FixedKeyProcessor
from ._fixed_key import FixedKeyProcessorContext as FixedKeyProcessorContext
from ._fixed_key import FixedKeyRecord as FixedKeyRecord
from ._global_table import GlobalKTable as GlobalKTable
from ._grouped import KGroupedStream as KGroupedStream
from ._grouped import KGroupedTable as KGroupedTable
from ._join_windows import JoinWindows as JoinWindows
from ._kstream import KStream as KStream
from ._ktable import KTable as KTable
from ._late import LateRecord as LateRecord
from ._late import LateRecords as LateRecords
from ._materialized import Materialized as Materialized
from ._materialized import materialized as materialized
from ._serdes import Serde as Serde
from ._serdes import Serdes as Serdes
from ._suppress import BufferConfig as BufferConfig
from ._suppress import Suppressed as Suppressed
from ._suppress import until_time_limit as until_time_limit
from ._suppress import until_window_closes as until_window_closes
from ._transform_values import ValueTransformerWithKey as ValueTransformerWithKey
from ._windowed_serdes import SessionWindowedSerde as SessionWindowedSerde
from ._windowed_serdes import TimeWindowedSerde as TimeWindowedSerde
from ._windowed_serdes import WindowedSerdes as WindowedSerdes
from ._windowed_stream import SessionWindowedKStream as SessionWindowedKStream
from ._windowed_stream import TimeWindowedKStream as TimeWindowedKStream
from ._windows import SessionWindows as SessionWindows
from ._windows import SlidingWindows as SlidingWindows
from ._windows import TimeWindows as TimeWindows

__all__ = [
    "AgentApp",
    "AgentStream",
    "AgentTopic",
    "BranchedKStream",
    "BufferConfig",
    "CogroupedKStream",
    "DeserializationError",
    "DslError",
    "FixedKeyProcessor",
    "FixedKeyProcessorContext",
    "FixedKeyRecord",
    "GlobalKTable",
    "JoinWindows",
    "KGroupedStream",
    "KGroupedTable",
    "KStream",
    "KTable",
    "LateRecord",
    "LateRecords",
    "Materialized",
    "Serde",
    "SerdeError",
    "Serdes",
    "SerializationError",
    "SerializerError",
    "SessionWindowedCogroupedKStream",
    "SessionWindowedKStream",
    "SessionWindowedSerde",
    "SessionWindows",
    "SlidingWindows",
    "StreamsBuilder",
    "Suppressed",
    "Table",
    "TimeWindowedCogroupedKStream",
    "TimeWindowedKStream",
    "TimeWindowedSerde",
    "TimeWindows",
    "TopologyBuildError",
    "ValueTransformerWithKey",
    "Window",
    "Windowed",
    "WindowedSerdes",
    "materialized",
    "until_time_limit",
    "until_window_closes",
]
