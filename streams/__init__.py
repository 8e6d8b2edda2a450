"""The processor API, the Topology, the task executor and (in ``streams.testing``) the test driver."""

from ._async import AsyncOptions as AsyncOptions
from ._async import AsyncProcessor as AsyncProcessor
from ._config import StreamsConfig as StreamsConfig
from ._context import ProcessorContext as ProcessorContext
from ._describe import NodeDescription as NodeDescription
from ._describe import SubtopologyDescription as SubtopologyDescription
from ._describe import TopologyDescription as TopologyDescription
from ._deserialization import DeadLetterQueueHandler as DeadLetterQueueHandler
from ._deserialization import DeserializationAction as DeserializationAction
from ._deserialization import DeserializationHandler as DeserializationHandler
from ._deserialization import DeserializationResponse as DeserializationResponse
from ._deserialization import LogAndContinueHandler as LogAndContinueHandler
from ._deserialization import LogAndFailHandler as LogAndFailHandler
from ._errors import ConfigError as ConfigError
from ._errors import IllegalStateTransition as IllegalStateTransition
from ._errors import NoOutputRecordError as NoOutputRecordError
from ._errors import ProcessingError as ProcessingError
from ._errors import RecordDeserializationError as RecordDeserializationError
from ._errors import StateStoreError as StateStoreError
from ._errors import StoreAccessError as StoreAccessError
from ._errors import StreamsError as StreamsError
from ._errors import TopologyError as TopologyError
from ._lifecycle import TaskState as TaskState
from ._nodes import Subtopology as Subtopology
from ._processor import BatchProcessor as BatchProcessor
from ._processor import Cancellable as Cancellable
from ._processor import Processor as Processor
from ._processor import ProcessorSupplier as ProcessorSupplier
from ._processor import PunctuationType as PunctuationType
from ._protocols import Deserializer as Deserializer
from ._protocols import Serializer as Serializer
from ._protocols import StateStore as StateStore
from ._protocols import StateStoreContext as StateStoreContext
from ._protocols import StoreBuilder as StoreBuilder
from ._protocols import StreamPartitioner as StreamPartitioner
from ._protocols import TimestampExtractor as TimestampExtractor
from ._protocols import TopicNameExtractor as TopicNameExtractor
from ._record import ConsumedRecord as ConsumedRecord
from ._record import Headers as Headers
from ._record import KeyValue as KeyValue
from ._record import ProducedRecord as ProducedRecord
from ._record import Rec as Rec
from ._record import Record as Record
from ._record import RecordMetadata as RecordMetadata
from ._task import TaskExecutor as TaskExecutor
from ._topology import Topology as Topology

__all__ = [
    "AsyncOptions",
    "AsyncProcessor",
    "BatchProcessor",
    "Cancellable",
    "ConfigError",
    "ConsumedRecord",
    "DeadLetterQueueHandler",
    "DeserializationAction",
    "DeserializationHandler",
    "DeserializationResponse",
    "Deserializer",
    "Headers",
    "IllegalStateTransition",
    "KeyValue",
    "LogAndContinueHandler",
    "LogAndFailHandler",
    "NoOutputRecordError",
    "NodeDescription",
    "ProcessingError",
    "Processor",
    "ProcessorContext",
    "ProcessorSupplier",
    "ProducedRecord",
    "PunctuationType",
    "Rec",
    "Record",
    "RecordDeserializationError",
    "RecordMetadata",
    "Serializer",
    "StateStore",
    "StateStoreContext",
    "StateStoreError",
    "StoreAccessError",
    "StoreBuilder",
    "StreamPartitioner",
    "StreamsConfig",
    "StreamsError",
    "Subtopology",
    "SubtopologyDescription",
    "TaskExecutor",
    "TaskState",
    "TimestampExtractor",
    "TopicNameExtractor",
    "Topology",
    "TopologyDescription",
    "TopologyError",
]

# The runtime imports the names above, so it comes last.
from .runtime import App as App

__all__ += ["App"]
