"""The broker's own settings (topic-level settings live in storage's config table)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .security import Listener, SecurityConfig
from .share import ShareConfig


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    data_dir: Path
    host: str = "127.0.0.1"
    port: int = 9092
    node_id: int = 1
    # fsync produced bytes before answering acks=1/all; False is `--fsync never`.
    fsync: bool = True
    auto_create_topics_enable: bool = True
    num_partitions: int = 1
    socket_request_max_bytes: int = 100 * 1024 * 1024
    # Frames a SASL listener reads before its client has authenticated: Kafka's
    # sasl.server.max.receive.size, so strangers cannot make it buffer 100 MiB each.
    sasl_server_max_receive_size: int = 512 * 1024
    # How long a failed SASL authentication waits before it is answered (Kafka's
    # connection.failed.authentication.delay.ms): it slows down password guessing.
    connection_failed_authentication_delay_ms: int = 100
    # Bounds on what clients may make the broker spend (see ``_limits``). None: derived
    # from the open-file limit at start.
    fetch_max_bytes: int = 55 * 1024 * 1024
    # Memory all fetch responses in flight may hold together (see ``_fetch_memory``);
    # Kafka has no such setting: it sends fetched bytes from the files with zero copy.
    fetch_response_max_memory_bytes: int = 256 * 1024 * 1024
    max_connections: int | None = None
    max_connections_per_ip: int | None = None
    connections_max_idle_ms: int = 600_000
    socket_request_read_timeout_ms: int = 30_000
    max_broker_partitions: int | None = None
    # Topics plus partitions one request may name; None: twice max.broker.partitions.
    max_partitions_per_request: int | None = None
    # Requests one connection may have in flight before the server stops reading from it.
    max_in_flight_per_connection: int = 64
    retention_check_interval_ms: int = 300_000
    # Pause between passes of the log cleaner over compacted topics.
    log_cleaner_backoff_ms: int = 15_000
    group_initial_rebalance_delay_ms: int = 3000
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1_800_000
    # The consumer group protocol (KIP-848); the first assignor is the default.
    group_consumer_session_timeout_ms: int = 45_000
    group_consumer_heartbeat_interval_ms: int = 5_000
    group_consumer_assignors: tuple[str, ...] = ("uniform", "range")
    # Kafka's default is 50; fewer partition directories suit a single broker.
    offsets_topic_num_partitions: int = 10
    transaction_max_timeout_ms: int = 900_000
    offset_metadata_max_bytes: int = 4096
    # Broker-wide topic config defaults by topic config name (server.properties gives
    # them by their broker names: message.max.bytes sets max.message.bytes).
    topic_defaults: tuple[tuple[str, str], ...] = ()
    offsets_retention_minutes: int = 7 * 24 * 60
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
            "broker.id": str(self.node_id),
            "node.id": str(self.node_id),
            "log.dirs": str(self.data_dir),
            "auto.create.topics.enable": str(self.auto_create_topics_enable).lower(),
            "num.partitions": str(self.num_partitions),
            "socket.request.max.bytes": str(self.socket_request_max_bytes),
            "sasl.server.max.receive.size": str(self.sasl_server_max_receive_size),
            "connection.failed.authentication.delay.ms": str(
                self.connection_failed_authentication_delay_ms
            ),
            "fetch.max.bytes": str(self.fetch_max_bytes),
            "fetch.response.max.memory.bytes": str(self.fetch_response_max_memory_bytes),
            "max.connections": str(self.max_connections),
            "max.connections.per.ip": str(self.max_connections_per_ip),
            "connections.max.idle.ms": str(self.connections_max_idle_ms),
            "socket.request.read.timeout.ms": str(self.socket_request_read_timeout_ms),
            "max.broker.partitions": str(self.max_broker_partitions),
            "max.partitions.per.request": str(self.max_partitions_per_request),
            "max.in.flight.requests.per.connection": str(self.max_in_flight_per_connection),
            "offset.metadata.max.bytes": str(self.offset_metadata_max_bytes),
            "log.retention.check.interval.ms": str(self.retention_check_interval_ms),
            "log.cleaner.backoff.ms": str(self.log_cleaner_backoff_ms),
            "group.initial.rebalance.delay.ms": str(self.group_initial_rebalance_delay_ms),
            "group.min.session.timeout.ms": str(self.group_min_session_timeout_ms),
            "group.max.session.timeout.ms": str(self.group_max_session_timeout_ms),
            "group.consumer.session.timeout.ms": str(self.group_consumer_session_timeout_ms),
            "group.consumer.heartbeat.interval.ms": str(self.group_consumer_heartbeat_interval_ms),
            "group.consumer.assignors": ",".join(self.group_consumer_assignors),
            "offsets.topic.num.partitions": str(self.offsets_topic_num_partitions),
            "transaction.max.timeout.ms": str(self.transaction_max_timeout_ms),
            "offsets.retention.minutes": str(self.offsets_retention_minutes),
            "log.flush.policy": "group-commit" if self.fsync else "never",
        }
