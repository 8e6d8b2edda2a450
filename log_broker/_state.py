"""What every request handler may reach: settings, logs, and the broker's services."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from headrace.transactions import TXN_LOG_TOPIC, ProducerIdAllocator

from ._config import BrokerConfig
from ._metrics import BrokerMetrics
from ._notify import AppendNotifier
from .groups import OFFSETS_TOPIC, GroupService
from .share import SHARE_STATE_TOPIC
from .storage import GroupSyncer, LogManager, PartitionLog, Topic, TopicExistsError

if TYPE_CHECKING:
    from ._txn_service import TxnService
    from .security import BrokerSecurity
    from .share import ShareService

# Topics the broker writes itself; clients may read them but not write or delete them.
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, TXN_LOG_TOPIC, SHARE_STATE_TOPIC})


@dataclass(eq=False)
class BrokerState:
    config: BrokerConfig
    logs: LogManager
    syncer: GroupSyncer
    producer_ids: ProducerIdAllocator
    cluster_id: str
    groups: GroupService
    txn: TxnService
    notifier: AppendNotifier = field(default_factory=AppendNotifier)
    security: BrokerSecurity | None = None
    metrics: BrokerMetrics = field(default_factory=BrokerMetrics)
    share: ShareService | None = None

    def topic(self, name: str, *, auto_create: bool) -> Topic | None:
        """The topic, created with broker defaults when allowed and missing.

        Raises storage's InvalidTopicError for a name that could never be created.
        """
        topic = self.logs.topics().get(name)
        if topic is None and auto_create and self.config.auto_create_topics_enable:
            try:
                topic = self.logs.create_topic(name, self.config.num_partitions, {})
            except TopicExistsError:  # another request is creating it: not there yet
                return None
        return topic

    def partition_log(self, name: str, partition: int) -> PartitionLog | None:
        return self.logs.get_log(name, partition)
