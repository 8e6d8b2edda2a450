"""``headrace broker --config server.properties``: Kafka's key names to Broker settings.

Flags given on the command line win over the file; the file wins over defaults.
``--listen HOST:PORT`` is the shorthand for ``listeners=PLAINTEXT://HOST:PORT``.
Keys this broker does not know are reported once at start, not silently ignored.
"""

from __future__ import annotations

import logging
from typing import Any

from .security import parse_listeners, security_from_properties

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
    "offsets.topic.num.partitions": ("offsets_topic_num_partitions", int),
    "transaction.max.timeout.ms": ("transaction_max_timeout_ms", int),
    "offsets.retention.minutes": ("offsets_retention_minutes", int),
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
    settings["security"] = security_from_properties(props)
    known = set(_PLAIN_KEYS) | {
        "log.dirs",
        "log.dir",
        "listeners",
        "process.roles",
        "controller.quorum.voters",
        "inter.broker.listener.name",
        "controller.listener.names",
    }
    unknown = sorted(k for k in props if k not in known and not k.startswith(_SECURITY_PREFIXES))
    if unknown:
        log.warning("server.properties keys not used by this broker: %s", ", ".join(unknown))
    return settings
