"""The broker's storage: partition logs of segment files, topics, configs, group fsync.

Errors are rooted at ``StorageError`` (tree in ``_errors``). Record batches are the layer
below, ``log_broker.records``, whose errors (``RecordError`` and its kinds) storage raises
too and re-exports.
"""

from ..records import CorruptRecordError as CorruptRecordError
from ..records import InvalidRecordError as InvalidRecordError
from ..records import RecordError as RecordError
from ..records import RecordTooLargeError as RecordTooLargeError
from ._config import CONFIG_DEFS as CONFIG_DEFS
from ._config import ConfigDef as ConfigDef
from ._config import ConfigEntry as ConfigEntry
from ._config import ConfigType as ConfigType
from ._config import TopicConfig as TopicConfig
from ._config import describe_configs as describe_configs
from ._config import effective_configs as effective_configs
from ._errors import InvalidConfigError as InvalidConfigError
from ._errors import InvalidPartitionsError as InvalidPartitionsError
from ._errors import InvalidTopicError as InvalidTopicError
from ._errors import KafkaStorageError as KafkaStorageError
from ._errors import LogClosedError as LogClosedError
from ._errors import OffsetOutOfRangeError as OffsetOutOfRangeError
from ._errors import StorageError as StorageError
from ._errors import TopicError as TopicError
from ._errors import TopicExistsError as TopicExistsError
from ._errors import UnknownTopicError as UnknownTopicError
from ._log import AppendResult as AppendResult
from ._log import LocatedBytes as LocatedBytes
from ._log import LogState as LogState
from ._log import PartitionLog as PartitionLog
from ._manager import LogManager as LogManager
from ._manager import Topic as Topic
from ._manager import validate_new_topic as validate_new_topic
from ._manager import validate_topic_name as validate_topic_name
from ._syncer import GroupSyncer as GroupSyncer

__all__ = [
    "CONFIG_DEFS",
    "AppendResult",
    "ConfigDef",
    "ConfigEntry",
    "ConfigType",
    "CorruptRecordError",
    "GroupSyncer",
    "InvalidConfigError",
    "InvalidPartitionsError",
    "InvalidRecordError",
    "InvalidTopicError",
    "KafkaStorageError",
    "LocatedBytes",
    "LogClosedError",
    "LogManager",
    "LogState",
    "OffsetOutOfRangeError",
    "PartitionLog",
    "RecordError",
    "RecordTooLargeError",
    "StorageError",
    "Topic",
    "TopicConfig",
    "TopicError",
    "TopicExistsError",
    "UnknownTopicError",
    "describe_configs",
    "effective_configs",
    "validate_new_topic",
    "validate_topic_name",
]
