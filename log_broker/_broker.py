"""The embeddable broker: ``async with Broker(data_dir) as broker: broker.bootstrap_servers``.

Start-up, in order: open (and recover) every partition log, create or replay
``__consumer_offsets`` to restore groups and committed offsets, load the producer-id
allocator and the cluster id, bind the listener (port 0 picks a free port, and the
bound port is what Metadata advertises), then start the group timers and the
maintenance timers. Each listener gets its own server (its TLS context, its SASL
requirement); security's stores (credentials, ACLs) open before the first one binds.
Shut-down reverses it: stop accepting, close client connections,
stop the maintenance and group timers (letting group writes in flight become durable),
then close the logs so each writes its clean-shutdown marker after a final sync.
Transactions start after groups (markers reach the group offsets) and before the
listener: ``__transaction_state`` is read and prepared commits and aborts finish first;
they stop before the logs close, snapshotting producer state.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from headrace.base import SystemClock, write_atomically
from headrace.transactions import ProducerIdAllocator

from ._config import BrokerConfig
from ._deadline_timer import DeadlineTimer
from ._limits import ConnectionLimiter, RateLimitedLog, broad_request_cap, file_budget
from ._metrics import BrokerMetrics
from ._notify import AppendNotifier
from ._server import Connection
from ._state import BrokerState
from ._txn_service import TxnService
from .groups import GroupConfig, GroupService
from .handlers import build_router
from .security import BrokerSecurity, Listener
from .share import ShareService
from .storage import GroupSyncer, LogManager
from .storage import _synced_checkpoint as synced_checkpoint

log = logging.getLogger("headrace.broker")


def _cluster_id(data_dir: Path) -> str:
    path = data_dir / "cluster.id"
    if path.exists():
        return path.read_text().strip()
    cluster_id = uuid.uuid4().hex[:22]
    write_atomically(path, cluster_id.encode("ascii"))
    return cluster_id


def _with_limits(config: BrokerConfig) -> BrokerConfig:
    """Fill the limits left at None from the open-file budget (see ``_limits``)."""
    budget = file_budget()
    max_connections = config.max_connections or budget.max_connections
    max_partitions = config.max_broker_partitions or budget.max_broker_partitions
    return dataclasses.replace(
        config,
        max_connections=max_connections,
        max_connections_per_ip=config.max_connections_per_ip or max_connections,
        max_broker_partitions=max_partitions,
        max_partitions_per_request=(
            config.max_partitions_per_request or broad_request_cap(max_partitions)
        ),
    )


class Broker:
    def __init__(
        self, data_dir: str | Path, *, host: str = "127.0.0.1", port: int = 0, **settings: Any
    ) -> None:
        self._config = _with_limits(
            BrokerConfig(data_dir=Path(data_dir), host=host, port=port, **settings)
        )
        self._limiter = ConnectionLimiter(
            self._config.max_connections or 0, self._config.max_connections_per_ip or 0
        )
        self._rate_limited = RateLimitedLog(log)
        self._servers: list[asyncio.Server] = []
        self._state: BrokerState | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._maintenance: list[DeadlineTimer] = []

    @property
    def config(self) -> BrokerConfig:
        return self._config

    @property
    def bootstrap_servers(self) -> str:
        return f"{self._config.host}:{self._config.port}"

    def address(self, listener_name: str) -> str:
        """HOST:PORT of one listener, by name (``SASL_SSL``), once bound."""
        for listener in self._config.bound_listeners():
            if listener.name == listener_name.upper():
                return f"{listener.host}:{listener.port}"
        raise KeyError(f"no listener named {listener_name!r}")

    @property
    def metrics(self) -> BrokerMetrics:
        """The broker's Prometheus metrics (``metrics.registry``, ``metrics.exposition()``)."""
        return self.state.metrics

    @property
    def state(self) -> BrokerState:
        if self._state is None:
            raise RuntimeError("broker is not running")
        return self._state

    async def start(self) -> None:
        config = self._config
        # Only the broker's user reads a new data directory: records, credentials and
        # ACLs are nobody else's business. One that exists keeps the modes it was given.
        config.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        loop = asyncio.get_running_loop()
        if loop.get_exception_handler() is None:  # an embedding program's own one stays
            loop.set_exception_handler(self._rate_limited.loop_exception_handler)
        # The record checks' walker loads here, not on the loop at a first produce.
        from .records._walk import record_walker

        walker = await asyncio.to_thread(record_walker)
        logs = await asyncio.to_thread(
            LogManager.open,
            config.data_dir,
            num_partitions_default=config.num_partitions,
            defaults=dict(config.topic_defaults),
            max_partitions=config.max_broker_partitions,
        )
        syncer = GroupSyncer(enabled=config.fsync)
        notifier = AppendNotifier()
        group_config = GroupConfig(
            initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
            min_session_timeout_ms=config.group_min_session_timeout_ms,
            max_session_timeout_ms=config.group_max_session_timeout_ms,
            offsets_topic_partitions=config.offsets_topic_num_partitions,
            offsets_retention_ms=config.offsets_retention_minutes * 60_000,
            offset_metadata_max_bytes=config.offset_metadata_max_bytes,
            consumer_session_timeout_ms=config.group_consumer_session_timeout_ms,
            consumer_heartbeat_interval_ms=config.group_consumer_heartbeat_interval_ms,
            consumer_assignors=config.group_consumer_assignors,
        )
        try:
            groups = await asyncio.to_thread(
                GroupService.open, logs, syncer, notifier, group_config
            )
            producer_ids = ProducerIdAllocator(config.data_dir / "producer_ids")
            txn = await asyncio.to_thread(
                TxnService.open,
                logs,
                syncer,
                notifier,
                groups,
                producer_ids,
                max_timeout_ms=config.transaction_max_timeout_ms,
            )
            share = await asyncio.to_thread(ShareService.open, logs, syncer, notifier, config.share)
        except BaseException:
            logs.close()
            raise
        try:
            security = await asyncio.to_thread(
                BrokerSecurity.open, config.data_dir, config.security, config.bound_listeners()
            )
            router = build_router()
            bound = tuple(
                [
                    await self._listen(listener, security, router)
                    for listener in config.bound_listeners()
                ]
            )
        except BaseException:
            await self._close_servers()
            logs.close()
            raise
        self._config = dataclasses.replace(
            config,
            host=bound[0].host,
            port=bound[0].port,
            listeners=bound if config.listeners else (),
        )
        security.warn_about_open_listeners(bound)
        self._state = BrokerState(
            config=self._config,
            logs=logs,
            syncer=syncer,
            producer_ids=producer_ids,
            cluster_id=_cluster_id(config.data_dir),
            groups=groups,
            txn=txn,
            notifier=notifier,
            security=security,
            share=share,
        )
        self._state.metrics.watch(
            self._state, {r.api_key: r.handle.__module__.rsplit(".", 1)[-1] for r in router}
        )
        groups.start()
        share.use_transactions(txn.partitions.get)
        share.start()
        await txn.start()
        self._start_maintenance()
        log.info(
            "broker %d listening on %s (data in %s, fsync %s, records walked by %s)",
            config.node_id,
            ", ".join(f"{b.name}://{b.host}:{b.port}" for b in bound),
            config.data_dir,
            "on" if config.fsync else "off",
            walker,
        )

    async def _listen(self, listener: Listener, security: BrokerSecurity, router: Any) -> Listener:
        # The listener as bound (port 0 resolved) is what its sessions advertise.
        bound = listener

        def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Any:
            session = security.new_session(bound, writer)
            return self._serve(Connection(self.state, router, reader, writer, session))

        server = await asyncio.start_server(
            accept,
            host=listener.host,
            port=listener.port,
            limit=2**20,
            ssl=security.ssl_for(listener),
        )
        self._servers.append(server)
        port = server.sockets[0].getsockname()[1]
        bound = dataclasses.replace(listener, port=port)
        return bound

    async def _close_servers(self) -> None:
        for server in self._servers:
            server.close()
        for server in self._servers:
            await server.wait_closed()
        self._servers = []

    async def _serve(self, connection: Connection) -> None:
        host = connection.peer_host
        refused = self._limiter.admit(host)
        if refused is not None:
            self._rate_limited.log(
                logging.WARNING, "refused", "refusing a connection from %s: %s", host, refused
            )
            connection.close()
            return
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await connection.serve()
        except asyncio.CancelledError:
            pass  # stop() cancels connections; asyncio's stream callback must not see it
        finally:
            self._connections.discard(task)
            self._limiter.release(host)

    def _start_maintenance(self) -> None:
        # Retention, compaction and the recovery checkpoint each on its own interval
        # (Kafka's log.retention.check.interval.ms and log.cleaner.backoff.ms are
        # intervals, not deadlines), all in worker threads.
        logs, config, clock = self.state.logs, self._config, SystemClock()
        passes = [
            (config.retention_check_interval_ms, "retention", lambda: logs.run_retention),
            (config.log_cleaner_backoff_ms, "compaction", self._compaction),
            (
                synced_checkpoint.INTERVAL_MS,
                "recovery checkpoint",
                lambda: logs.checkpoint_synced_positions,
            ),
        ]
        self._maintenance = [
            DeadlineTimer.every(
                f"{name} pass", interval_ms, self._pass(name, prepare), clock.monotonic_ms, log
            )
            for interval_ms, name, prepare in passes
        ]
        for timer in self._maintenance:
            timer.start()

    def _compaction(self) -> Callable[[int], int]:
        # Compaction must stop at each partition's last stable offset. It is read here,
        # on the loop that moves it, before the pass starts in its thread: an LSO only
        # grows, so the pass may rely on it throughout. Partitions whose transaction
        # state is not loaded yet are bounded by the cleaner's own reading of the log.
        # Loaded states also release aborted transactions, so their abort markers may
        # go (a thread-safe hand-off, ``PartitionTxn.release``); an unloaded partition
        # has no index to release from, and keeps its abort markers until it loads.
        logs = self.state.logs
        states = {t.log: t for t in self.state.txn.partitions.loaded()}
        stable = {log: t.last_stable_offset() for log, t in states.items()}
        return lambda now_ms: logs.run_compaction(now_ms, stable.get, states.get)

    def _pass(
        self, name: str, prepare: Callable[[], Callable[[int], int]]
    ) -> Callable[[], Awaitable[None]]:
        """One maintenance pass: ``prepare()`` on the loop, what it returns in a worker
        thread; counted and timed in the metrics, its failure logged (the next pass
        comes all the same)."""
        metrics = self.state.metrics

        async def run() -> None:
            started = time.perf_counter()
            try:
                await asyncio.to_thread(prepare(), int(time.time() * 1000))
                metrics.maintenance_passes.labels(name, "ok").inc()
            except Exception:
                metrics.maintenance_passes.labels(name, "failed").inc()
                log.exception("%s pass failed", name)
            metrics.maintenance_seconds.labels(name).observe(time.perf_counter() - started)

        return run

    async def stop(self) -> None:
        for server in self._servers:
            server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
        for timer in self._maintenance:
            await timer.stop()
        self._maintenance = []
        await self._close_servers()
        if self._state is not None:
            await self._state.txn.stop()
            await self._state.groups.stop()
            if self._state.share is not None:
                await self._state.share.stop()
            self._state.logs.close()
            self._state.syncer.close()
            self._state = None
        log.info("broker stopped")

    async def serve_forever(self) -> None:
        assert self._servers
        await asyncio.gather(*(server.serve_forever() for server in self._servers))

    async def __aenter__(self) -> Broker:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
