"""The streams runtime: a topology run as a service in a consumer group.

``App`` joins the group, maps partitions to tasks, restores stores from changelogs,
runs the commit loop (at least once, or exactly once in transactions) and serves
health, metrics and interactive queries.
"""

from ._app import App as App
from ._app import AppState as AppState
from ._assignor import PartitionGroupAssignor as PartitionGroupAssignor
from ._assignor import assign_tasks as assign_tasks
from ._client import ChangelogReader as ChangelogReader
from ._client import ClientFactory as ClientFactory
from ._client import GroupConsumer as GroupConsumer
from ._client import RecordProducer as RecordProducer
from ._client import TopicAdmin as TopicAdmin
from ._client import TransactionalProducer as TransactionalProducer
from ._errors import AppStopped as AppStopped
from ._errors import ClientError as ClientError
from ._errors import CoPartitionError as CoPartitionError
from ._errors import FencedError as FencedError
from ._errors import ProductionError as ProductionError
from ._errors import RestoreError as RestoreError
from ._errors import RuntimeFailure as RuntimeFailure
from ._errors import SettingsError as SettingsError
from ._errors import SourceTopicDeletedError as SourceTopicDeletedError
from ._errors import TransactionAbortedError as TransactionAbortedError
from ._errors import TransactionError as TransactionError
from ._murmur2 import murmur2 as murmur2
from ._murmur2 import partition_for_key as partition_for_key
from ._partition_groups import TaskLayout as TaskLayout
from ._settings import AppSettings as AppSettings

__all__ = [
    "App",
    "AppSettings",
    "AppState",
    "AppStopped",
    "ChangelogReader",
    "ClientError",
    "ClientFactory",
    "CoPartitionError",
    "FencedError",
    "GroupConsumer",
    "PartitionGroupAssignor",
    "ProductionError",
    "RecordProducer",
    "RestoreError",
    "RuntimeFailure",
    "SettingsError",
    "SourceTopicDeletedError",
    "TaskLayout",
    "TopicAdmin",
    "TransactionAbortedError",
    "TransactionError",
    "TransactionalProducer",
    "assign_tasks",
    "murmur2",
    "partition_for_key",
]
