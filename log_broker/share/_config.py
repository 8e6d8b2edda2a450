"""Settings of share groups, named after the Kafka settings they mirror.

Broker-wide values come from the broker's configuration; a group may override the
per-group ones (``share.*``) through IncrementalAlterConfigs on its GROUP resource.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from ._errors import InvalidShareConfigError

SHARE_STATE_TOPIC = "__share_group_state"
EARLIEST = "earliest"
LATEST = "latest"
READ_UNCOMMITTED = "read_uncommitted"
READ_COMMITTED = "read_committed"
_CHOICES = {
    "auto_offset_reset": (EARLIEST, LATEST),
    "isolation_level": (READ_UNCOMMITTED, READ_COMMITTED),
}


@dataclass(frozen=True, slots=True)
class PartitionRules:
    """What governs one share partition's records (per group)."""

    # group.share.record.lock.duration.ms / share.record.lock.duration.ms
    lock_duration_ms: int = 30_000
    # group.share.delivery.count.limit / share.delivery.count.limit
    delivery_count_limit: int = 5
    # group.share.partition.max.record.locks: records in flight per share partition.
    max_in_flight_records: int = 2000
    # share.auto.offset.reset: where a share partition starts when first read.
    auto_offset_reset: str = LATEST
    # share.isolation.level: read_committed stops at the last stable offset and never
    # delivers records of aborted transactions.
    isolation_level: str = READ_UNCOMMITTED
    # share.renew.acknowledge.enable (KIP-1222): whether members may extend their locks
    # with RENEW acknowledgements; when off, a RENEW is refused as an invalid record state.
    renew_enabled: bool = True


# Group config name -> (field, parser); what IncrementalAlterConfigs may set on a group.
_GROUP_KEYS = {
    "share.record.lock.duration.ms": "lock_duration_ms",
    "share.delivery.count.limit": "delivery_count_limit",
    "share.auto.offset.reset": "auto_offset_reset",
    "share.isolation.level": "isolation_level",
    "share.renew.acknowledge.enable": "renew_enabled",
}
_BOOLEANS = {"renew_enabled"}
GROUP_CONFIG_NAMES = frozenset(_GROUP_KEYS)


def rules_with(base: PartitionRules, overrides: Mapping[str, str]) -> PartitionRules:
    """``base`` with a group's overrides applied; raises InvalidShareConfigError."""
    changes: dict[str, object] = {}
    for name, value in overrides.items():
        field = _GROUP_KEYS.get(name)
        if field is None:
            raise InvalidShareConfigError(f"unknown share group config {name!r}")
        if field in _CHOICES:
            if value not in _CHOICES[field]:
                raise InvalidShareConfigError(f"{name} must be one of {', '.join(_CHOICES[field])}")
            changes[field] = value
            continue
        if field in _BOOLEANS:  # as Kafka's BOOLEAN configs: true or false, any case
            if value.strip().lower() not in ("true", "false"):
                raise InvalidShareConfigError(f"{name} must be true or false, not {value!r}")
            changes[field] = value.strip().lower() == "true"
            continue
        try:
            number = int(value)
        except ValueError:
            raise InvalidShareConfigError(f"{name} must be an integer, not {value!r}") from None
        if field == "delivery_count_limit" and not 2 <= number <= 10:
            raise InvalidShareConfigError(f"{name} must be within 2..10")  # Kafka's bounds
        if field == "lock_duration_ms" and not 1000 <= number <= 3_600_000:
            raise InvalidShareConfigError(f"{name} must be within 1000..3600000")
        changes[field] = number
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class ShareConfig:
    rules: PartitionRules = PartitionRules()
    # group.share.session.timeout.ms: a member that stops heartbeating leaves after this.
    session_timeout_ms: int = 45_000
    # group.share.heartbeat.interval.ms
    heartbeat_interval_ms: int = 5_000
    # group.share.max.size: members per share group.
    max_group_members: int = 200
    # group.share.max.groups: share groups on this broker (Kafka's default is 10).
    max_groups: int = 100
    # group.share.max.share.sessions: share sessions (one per member) on this broker.
    max_sessions: int = 2000
    # Partitions of __share_group_state (hashed by group).
    state_topic_partitions: int = 4
    state_topic_segment_bytes: int = 16 * 1024 * 1024

    def state_topic_configs(self) -> dict[str, str]:
        """``__share_group_state``'s configs beside its cleanup policy (compact)."""
        return {"segment.bytes": str(self.state_topic_segment_bytes)}


# server.properties key -> (ShareConfig or PartitionRules field, is a rule)
_BROKER_KEYS = {
    "group.share.record.lock.duration.ms": ("lock_duration_ms", True),
    "group.share.delivery.count.limit": ("delivery_count_limit", True),
    "group.share.partition.max.record.locks": ("max_in_flight_records", True),
    "share.auto.offset.reset": ("auto_offset_reset", True),
    "share.isolation.level": ("isolation_level", True),
    "group.share.session.timeout.ms": ("session_timeout_ms", False),
    "group.share.heartbeat.interval.ms": ("heartbeat_interval_ms", False),
    "group.share.max.size": ("max_group_members", False),
    "group.share.max.groups": ("max_groups", False),
    "group.share.max.share.sessions": ("max_sessions", False),
}
BROKER_CONFIG_NAMES = frozenset(_BROKER_KEYS)


def share_from_properties(props: Mapping[str, str]) -> ShareConfig:
    """The broker-wide share settings in server.properties (Kafka's key names)."""
    rules: dict[str, object] = {}
    plain: dict[str, object] = {}
    for key, (field, is_rule) in _BROKER_KEYS.items():
        if key not in props:
            continue
        raw = props[key].strip()
        if field in _CHOICES:
            if raw not in _CHOICES[field]:
                raise ValueError(f"{key}: must be one of {', '.join(_CHOICES[field])}, not {raw!r}")
            value: object = raw
        else:
            try:
                value = int(raw)
            except ValueError:
                raise ValueError(f"{key}: cannot read {raw!r}") from None
            if int(raw) <= 0:
                raise ValueError(f"{key}: must be positive")
        (rules if is_rule else plain)[field] = value
    base = ShareConfig()
    return dataclasses.replace(
        base,
        rules=dataclasses.replace(base.rules, **rules),  # type: ignore[arg-type]
        **plain,  # type: ignore[arg-type]
    )
