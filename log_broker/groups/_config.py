"""Settings of the group coordinator, named after the Kafka broker settings they mirror."""

from __future__ import annotations

from dataclasses import dataclass

from ._assignors import ASSIGNORS

OFFSETS_TOPIC = "__consumer_offsets"


@dataclass(frozen=True, slots=True)
class GroupConfig:
    # group.initial.rebalance.delay.ms: how long a first rebalance waits for more members.
    initial_rebalance_delay_ms: int = 3000
    # group.min.session.timeout.ms / group.max.session.timeout.ms
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    # offsets.retention.minutes, in ms: how long an empty group keeps its offsets.
    offsets_retention_ms: int = 7 * 24 * 60 * 60 * 1000
    # offsets.retention.check.interval.ms
    offsets_retention_check_interval_ms: int = 600_000
    # offsets.topic.num.partitions: Kafka's default is 50; fewer files suit one broker.
    offsets_topic_partitions: int = 10
    # offsets.topic.segment.bytes: small segments let compaction reach old commits.
    offsets_topic_segment_bytes: int = 100 * 1024 * 1024
    # offset.metadata.max.bytes
    offset_metadata_max_bytes: int = 4096
    # How long a brand-new member's first JoinGroup may wait (Kafka's fixed 5 minutes).
    new_member_join_timeout_ms: int = 300_000
    # The consumer group protocol (KIP-848): group.consumer.session.timeout.ms,
    # group.consumer.heartbeat.interval.ms, group.consumer.assignors (the first is the
    # default) and group.consumer.max.size.
    consumer_session_timeout_ms: int = 45_000
    consumer_heartbeat_interval_ms: int = 5_000
    consumer_assignors: tuple[str, ...] = ("uniform", "range")
    consumer_max_size: int = 1_000

    def __post_init__(self) -> None:
        unknown = [a for a in self.consumer_assignors if a not in ASSIGNORS]
        if unknown or not self.consumer_assignors:
            raise ValueError(
                f"group.consumer.assignors: unknown {unknown}; known: {sorted(ASSIGNORS)}"
            )

    def offsets_topic_configs(self) -> dict[str, str]:
        """``__consumer_offsets``' configs beside its cleanup policy (compact)."""
        return {"segment.bytes": str(self.offsets_topic_segment_bytes)}
