"""The broker's own settings (topic-level settings live in storage's config table).

Each plain setting is one row: a field whose default is given by ``setting(...)`` with
its Kafka key, the flag's help and whether it has a flag (see ``_setting_table``). The
rest are written by hand: the data directory, host and port (``--data-dir``/``log.dirs``
and ``--listen``/``listeners`` are read with their own rules), fsync (a flag of two words
that Kafka has no key for), topic defaults (keyed by storage's topic config table),
listeners, security and share groups (many keys each, read by their own modules).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ._setting_table import BOOLEAN, LIST, STRING, describe, setting, setting_rows
from .security import Listener, SecurityConfig
from .share import ShareConfig


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    data_dir: Path
    host: str = "127.0.0.1"
    port: int = 9092
    node_id: int = setting("node.id", 1, flag=False, synonyms=("broker.id",))
    # fsync produced bytes before answering acks=1/all; False is `--fsync never`.
    fsync: bool = True
    auto_create_topics_enable: bool = setting(
        "auto.create.topics.enable", True, kind=BOOLEAN, flag="--no-auto-create-topics"
    )
    num_partitions: int = setting(
        "num.partitions", 1, help="partitions of auto-created topics (default 1)"
    )
    socket_request_max_bytes: int = setting(
        "socket.request.max.bytes", 100 * 1024 * 1024, help="default 100 MiB", limit=True
    )
    # Frames a SASL listener reads before its client has authenticated: Kafka's
    # sasl.server.max.receive.size, so strangers cannot make it buffer 100 MiB each.
    sasl_server_max_receive_size: int = setting(
        "sasl.server.max.receive.size",
        512 * 1024,
        help="largest request before a SASL client has authenticated (default 512 KiB)",
        limit=True,
    )
    # How long a failed SASL authentication waits before it is answered (Kafka's
    # connection.failed.authentication.delay.ms): it slows down password guessing.
    connection_failed_authentication_delay_ms: int = setting(
        "connection.failed.authentication.delay.ms",
        100,
        help="wait before answering a failed SASL authentication (default 100)",
        limit=True,
    )
    # Bounds on what clients may make the broker spend (see ``_limits``). None: derived
    # from the open-file limit at start.
    fetch_max_bytes: int = setting(
        "fetch.max.bytes",
        55 * 1024 * 1024,
        help="largest Fetch response, whatever the client asks for (55 MiB)",
        limit=True,
    )
    # Memory all fetch responses in flight may hold together (see ``_fetch_memory``);
    # Kafka has no such setting: it sends fetched bytes from the files with zero copy.
    fetch_response_max_memory_bytes: int = setting(
        "fetch.response.max.memory.bytes",
        256 * 1024 * 1024,
        help="memory all Fetch responses in flight may hold together (default 256 MiB)",
        limit=True,
    )
    max_connections: int | None = setting(
        "max.connections", None, help="default: a quarter of the open-file limit", limit=True
    )
    max_connections_per_ip: int | None = setting(
        "max.connections.per.ip", None, help="default: --max-connections", limit=True
    )
    connections_max_idle_ms: int = setting(
        "connections.max.idle.ms", 600_000, help="default 600000", limit=True
    )
    socket_request_read_timeout_ms: int = setting(
        "socket.request.read.timeout.ms",
        30_000,
        help="time for the rest of a request once its size has arrived (default 30000)",
        limit=True,
    )
    max_broker_partitions: int | None = setting(
        "max.broker.partitions",
        None,
        help="partitions in all topics together; default from the open-file limit",
        limit=True,
    )
    # Topics plus partitions one request may name; None: twice max.broker.partitions.
    max_partitions_per_request: int | None = setting(
        "max.partitions.per.request",
        None,
        help="topics plus partitions one request may name (default twice the above)",
        limit=True,
    )
    # Requests one connection may have in flight before the server stops reading from it.
    max_in_flight_per_connection: int = setting(
        "max.in.flight.requests.per.connection",
        64,
        help="requests read ahead of their answers on one connection (default 64)",
        limit=True,
    )
    retention_check_interval_ms: int = setting(
        "log.retention.check.interval.ms", 300_000, flag=False
    )
    # Pause between passes of the log cleaner over compacted topics.
    log_cleaner_backoff_ms: int = setting(
        "log.cleaner.backoff.ms",
        15_000,
        help="pause between log cleaner passes over compacted topics",
    )
    group_initial_rebalance_delay_ms: int = setting("group.initial.rebalance.delay.ms", 3000)
    group_min_session_timeout_ms: int = setting("group.min.session.timeout.ms", 6000)
    group_max_session_timeout_ms: int = setting(
        "group.max.session.timeout.ms", 1_800_000, flag=False
    )
    # The consumer group protocol (KIP-848); the first assignor is the default.
    group_consumer_session_timeout_ms: int = setting(
        "group.consumer.session.timeout.ms", 45_000, help="default 45000"
    )
    group_consumer_heartbeat_interval_ms: int = setting(
        "group.consumer.heartbeat.interval.ms", 5_000, help="default 5000"
    )
    group_consumer_assignors: tuple[str, ...] = setting(
        "group.consumer.assignors", ("uniform", "range"), kind=LIST, flag=False
    )
    # Kafka's default is 50; fewer partition directories suit a single broker.
    offsets_topic_num_partitions: int = setting("offsets.topic.num.partitions", 10, flag=False)
    transaction_max_timeout_ms: int = setting(
        "transaction.max.timeout.ms",
        900_000,
        help="longest transaction.timeout.ms a producer may ask for",
    )
    offset_metadata_max_bytes: int = setting("offset.metadata.max.bytes", 4096, flag=False)
    # Where topics whose headrace.table.mode is set keep their Delta tables (a directory or
    # an s3:// URL); empty: no table writer. The broker only reports it: ``headrace broker``
    # runs the writer beside it (headrace/_table_writer_process.py) as a Kafka client.
    table_location: str = setting(
        "headrace.table.location",
        "",
        kind=STRING,
        flag="--table-location",
        help="keep a Delta table of each topic whose headrace.table.mode is set, at"
        " LOCATION/<topic> (a directory or an s3:// URL)",
    )
    # The registry whose latest value schemas give value_schema_latest tables their columns,
    # when it does not run beside the broker (--schema-registry-listen is used first).
    table_schema_registry_url: str = setting(
        "headrace.table.schema.registry.url",
        "",
        kind=STRING,
        flag="--table-schema-registry-url",
        help="the schema registry of value_schema_latest tables"
        " (default: the one --schema-registry-listen runs)",
    )
    # Broker-wide topic config defaults by topic config name (server.properties gives
    # them by their broker names: message.max.bytes sets max.message.bytes).
    topic_defaults: tuple[tuple[str, str], ...] = ()
    offsets_retention_minutes: int = setting("offsets.retention.minutes", 7 * 24 * 60, flag=False)
    # Empty: one PLAINTEXT listener on host:port. Otherwise host and port are the first
    # listener's once the broker is bound.
    listeners: tuple[Listener, ...] = ()
    security: SecurityConfig = field(default_factory=SecurityConfig)
    # Share groups (KIP-932): group.share.* settings and the share.* group defaults.
    share: ShareConfig = field(default_factory=ShareConfig)

    def bound_listeners(self) -> tuple[Listener, ...]:
        return self.listeners or (Listener("PLAINTEXT", "PLAINTEXT", self.host, self.port),)

    def broker_configs(self) -> dict[str, str]:
        """Broker-level settings as DescribeConfigs reports them."""
        return {
            **describe(BROKER_SETTINGS, self),
            "log.dirs": str(self.data_dir),
            "log.flush.policy": "group-commit" if self.fsync else "never",
        }


# Every plain setting's row, in BrokerConfig's field order.
BROKER_SETTINGS = setting_rows(BrokerConfig)
