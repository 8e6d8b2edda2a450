"""``headrace broker --config server.properties``: Kafka's key names to Broker settings.

Flags given on the command line win over the file; the file wins over defaults.
``--listen HOST:PORT`` is the shorthand for ``listeners=PLAINTEXT://HOST:PORT``.
Keys this broker does not know are reported once at start, not silently ignored.
"""

from __future__ import annotations

import logging
from typing import Any

from .security import parse_listeners, security_from_properties
from .share import BROKER_CONFIG_NAMES as SHARE_KEYS
from .share import share_from_properties
from .storage import CONFIG_DEFS

log = logging.getLogger("headrace.broker")

# server.properties key -> (Broker setting, converter)
_PLAIN_KEYS: dict[str, tuple[str, Any]] = {
    "node.id": ("node_id", int),
    "broker.id": ("node_id", int),
    "num.partitions": ("num_partitions", int),
    "auto.create.topics.enable": ("auto_create_topics_enable", lambda v: v.lower() == "true"),
    "socket.request.max.bytes": ("socket_request_max_bytes", int),
    "log.retention.check.interval.ms": ("retention_check_interval_ms", int),
    "log.cleaner.backoff.ms": ("log_cleaner_backoff_ms", int),
    "group.initial.rebalance.delay.ms": ("group_initial_rebalance_delay_ms", int),
    "group.min.session.timeout.ms": ("group_min_session_timeout_ms", int),
    "group.max.session.timeout.ms": ("group_max_session_timeout_ms", int),
    "group.consumer.session.timeout.ms": ("group_consumer_session_timeout_ms", int),
    "group.consumer.heartbeat.interval.ms": ("group_consumer_heartbeat_interval_ms", int),
    "group.consumer.assignors": (
        "group_consumer_assignors",
        lambda v: tuple(a.strip() for a in v.split(",") if a.strip()),
    ),
    "offsets.topic.num.partitions": ("offsets_topic_num_partitions", int),
    "transaction.max.timeout.ms": ("transaction_max_timeout_ms", int),
    "offsets.retention.minutes": ("offsets_retention_minutes", int),
    "offset.metadata.max.bytes": ("offset_metadata_max_bytes", int),
    # Limits on what clients may make the broker spend (see _limits).
    "fetch.max.bytes": ("fetch_max_bytes", int),
    "fetch.response.max.memory.bytes": ("fetch_response_max_memory_bytes", int),
    "max.connections": ("max_connections", int),
    "max.connections.per.ip": ("max_connections_per_ip", int),
    "connections.max.idle.ms": ("connections_max_idle_ms", int),
    "socket.request.read.timeout.ms": ("socket_request_read_timeout_ms", int),
    "sasl.server.max.receive.size": ("sasl_server_max_receive_size", int),
    "connection.failed.authentication.delay.ms": (
        "connection_failed_authentication_delay_ms",
        int,
    ),
    "max.broker.partitions": ("max_broker_partitions", int),
    "max.partitions.per.request": ("max_partitions_per_request", int),
    "max.in.flight.requests.per.connection": ("max_in_flight_per_connection", int),
}
# Broker-wide defaults of topic configs, by their broker names (message.max.bytes,
# log.retention.ms, ...): server.properties key -> topic config name.
_TOPIC_DEFAULT_KEYS = {d.broker_name: name for name, d in CONFIG_DEFS.items() if d.broker_name}
# The coarser spellings Kafka also reads; the finer one wins when both are given.
_IN_HOURS_OR_MINUTES = {
    "log.retention.hours": ("retention.ms", 3_600_000),
    "log.retention.minutes": ("retention.ms", 60_000),
    "log.roll.hours": ("segment.ms", 3_600_000),
    "log.roll.jitter.hours": ("segment.jitter.ms", 3_600_000),
}
_SECURITY_PREFIXES = (
    "ssl.",
    "sasl.",
    "listener",
    "advertised.listeners",
    "super.users",
    "authorizer.class.name",
    "allow.everyone.if.no.acl.found",
)


def broker_settings(props: dict[str, str]) -> dict[str, Any]:
    """Broker keyword settings (``data_dir`` among them when ``log.dirs`` is set)."""
    settings: dict[str, Any] = {}
    for key, (name, convert) in _PLAIN_KEYS.items():
        if key in props:
            try:
                settings[name] = convert(props[key].strip())
            except ValueError:
                raise ValueError(f"{key}: cannot read {props[key]!r}") from None
    if "log.dirs" in props or "log.dir" in props:
        dirs = props.get("log.dirs", props.get("log.dir", "")).split(",")
        if len(dirs) != 1:
            raise ValueError("log.dirs: this broker keeps its data in one directory")
        settings["data_dir"] = dirs[0].strip()
    if "listeners" in props:
        settings["listeners"] = parse_listeners(
            props["listeners"],
            props.get("advertised.listeners"),
            props.get("listener.security.protocol.map"),
        )
    topic_defaults: dict[str, str] = {}
    for key, (name, unit_ms) in _IN_HOURS_OR_MINUTES.items():  # hours first: minutes win
        if key in props:
            try:
                topic_defaults[name] = str(int(props[key].strip()) * unit_ms)
            except ValueError:
                raise ValueError(f"{key}: cannot read {props[key]!r}") from None
    topic_defaults.update(
        (_TOPIC_DEFAULT_KEYS[key], value.strip())
        for key, value in props.items()
        if key in _TOPIC_DEFAULT_KEYS
    )
    if topic_defaults:
        settings["topic_defaults"] = tuple(sorted(topic_defaults.items()))
    settings["security"] = security_from_properties(props)
    settings["share"] = share_from_properties(props)
    known = (
        set(_PLAIN_KEYS)
        | SHARE_KEYS
        | set(_TOPIC_DEFAULT_KEYS)
        | set(_IN_HOURS_OR_MINUTES)
        | {
            "log.dirs",
            "log.dir",
            "listeners",
            "process.roles",
            "controller.quorum.voters",
            "inter.broker.listener.name",
            "controller.listener.names",
        }
    )
    unknown = sorted(k for k in props if k not in known and not k.startswith(_SECURITY_PREFIXES))
    if unknown:
        log.warning("server.properties keys not used by this broker: %s", ", ".join(unknown))
    return settings
