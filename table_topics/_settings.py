"""What a topic's configs say about its table, read from DescribeConfigs' answer.

The broker validates the values when they are set (INVALID_CONFIG otherwise), so here
they are only read; a topic whose mode is ``disabled`` has no settings at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

MODE = "headrace.table.mode"
PARTITION_BY = "headrace.table.partition.by"
COMMIT_INTERVAL_MS = "headrace.table.commit.interval.ms"
DISABLED = "disabled"
KEY_VALUE = "key_value"
VALUE_SCHEMA_LATEST = "value_schema_latest"
HOUR_OF_TIMESTAMP = "hour(timestamp)"
DEFAULT_COMMIT_INTERVAL_MS = 5000


@dataclass(frozen=True, slots=True)
class TableSettings:
    """One topic's table: how rows are made and written, and how often.

    Two settings that compare equal describe the same writer; when a topic's settings
    change (another mode, interval or partition count), its writer is replaced. So is
    the writer of a topic deleted and created again under its name: ``topic_id`` (Kafka's
    form, as ``kafka-topics --describe`` prints it) differs, and the table's offsets are
    recorded per id (``_table_commit``). Empty for a cluster that gives no topic ids.
    """

    topic: str
    mode: str
    partition_by: str
    commit_interval_ms: int
    compacted: bool  # cleanup.policy has compact: the table keeps the latest row per key
    partitions: int
    topic_id: str = ""

    @classmethod
    def from_configs(
        cls, topic: str, configs: Mapping[str, str], partitions: int, topic_id: str = ""
    ) -> TableSettings | None:
        """The settings of a topic, or None when its table is disabled (or the broker
        does not know the table configs at all: another Kafka cluster)."""
        mode = configs.get(MODE, DISABLED)
        if mode == DISABLED:
            return None
        return cls(
            topic=topic,
            mode=mode,
            partition_by=configs.get(PARTITION_BY, ""),
            commit_interval_ms=int(configs.get(COMMIT_INTERVAL_MS, DEFAULT_COMMIT_INTERVAL_MS)),
            compacted="compact" in configs.get("cleanup.policy", "delete").split(","),
            partitions=partitions,
            topic_id=topic_id,
        )
