"""``headrace broker --config server.properties``: Kafka's key names to Broker settings.

Flags given on the command line win over the file; the file wins over defaults.
``--listen HOST:PORT`` is the shorthand for ``listeners=PLAINTEXT://HOST:PORT``.
Keys this broker does not know are reported once at start, not silently ignored.
"""

from __future__ import annotations

import logging
from typing import Any

from ._config import BROKER_SETTINGS
from ._setting_table import from_properties
from .security import parse_listeners, security_from_properties
from .share import BROKER_CONFIG_NAMES as SHARE_KEYS
from .share import share_from_properties
from .storage import CONFIG_DEFS

log = logging.getLogger("headrace.broker")

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
    settings = from_properties(BROKER_SETTINGS, props)
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
        {key for row in BROKER_SETTINGS for key in row.keys}
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
