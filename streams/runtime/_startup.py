"""Start-up: everything a running App holds, built once, as one :class:`Runtime`.

:func:`start_runtime`, step by step (the App's module docstring says why in this order):

1. read the partition counts of the topology's source topics, of its global topics
   and of the topics it writes to, which must all exist, and check co-partitioning;
2. check the sinks' serdes, then create the internal topics (repartition topics and
   compacted changelogs) that are missing;
3. read the global topics to their ends into the global stores (``_global.py``);
4. start the producer (transactional under exactly-once: started before anything is
   read, so its InitProducerId aborts what a predecessor left open), the changelog
   reader and, with standby replicas of stateful tasks, the standby reader;
5. start the group consumer, with the assignor that places whole tasks.

Steps 1 and 2 ask the cluster through the admin client, and so does its start: while
the cluster answers with retriable errors (a broker down, a leader being elected) each
call is tried again, all of them within ``startup_timeout_ms`` from the start, saying
what they wait for (``_startup_wait.py``).

If a step fails, what the steps before it started is stopped again before the error
goes on: an App holds a whole runtime or none. The runtime's parts are fixed once
built; the one that changes while it runs, the producer a fenced instance replaces,
lives in the committer (:attr:`Committer.producer`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .._config import StreamsConfig
from .._nodes import SinkNode
from .._topology import Topology
from ._assignor import PartitionGroupAssignor
from ._async_work import AsyncWork
from ._client import (
    ChangelogReader,
    ClientFactory,
    GlobalReader,
    GroupConsumer,
    RecordProducer,
    TopicAdmin,
    TopicSpec,
    TransactionalProducer,
)
from ._commit import Committer, GroupOffsetSink, OffsetSink, TransactionSink
from ._counted import CountingClients
from ._errors import ClientError, SettingsError
from ._global import GlobalStores, global_topics
from ._handlers import ErrorHandler, deserialization_handler
from ._metrics import AppMetrics
from ._partition_groups import (
    TaskLayout,
    changelog_topics,
    internal_topic_partitions,
    source_topics,
)
from ._restore import Restorer
from ._rewind import Rewinder, transactional_id
from ._settings import AppSettings
from ._standby import StandbyUpdater
from ._startup_wait import StartupWait
from ._tasks import TaskManager

log = logging.getLogger("headrace.streams.runtime.app")


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class Runtime:
    """What start-up built for one run of an App; see the module docstring."""

    topology: Topology
    layout: TaskLayout
    counts: Mapping[str, int]  # partition count per topic the application uses
    admin: TopicAdmin
    global_reader: GlobalReader | None
    globals: GlobalStores | None
    tasks: TaskManager
    assignor: PartitionGroupAssignor
    processing_errors: ErrorHandler
    reader: ChangelogReader
    restorer: Restorer
    standby_reader: ChangelogReader | None
    standbys: StandbyUpdater | None
    consumer: GroupConsumer
    async_work: AsyncWork
    committer: Committer
    rewinder: Rewinder
    stop: asyncio.Event  # set to end the processing loop

    async def close_globals(self, clean: bool) -> None:
        """After the stream tasks, which read the global stores until they close."""
        if self.globals is not None:
            await _close_globals(self.globals, clean)

    async def stop_clients(self) -> None:
        """Stop every client; the producer is the committer's, which a rewind may have
        replaced."""
        for name, client in (
            ("consumer", self.consumer),
            ("producer", self.committer.producer),
            ("reader", self.reader),
            ("standby_reader", self.standby_reader),
            ("global_reader", self.global_reader),
            ("admin", self.admin),
        ):
            if client is not None:
                await _stop(name, client)


def _local_state(tasks: TaskManager, standbys: StandbyUpdater | None) -> dict[str, int]:
    """Changelog offset sums of the tasks this instance has state for (assignor)."""
    sums = tasks.local_state()
    if standbys is not None:
        sums.update(standbys.offset_sums())
    return sums


async def _stop(name: str, client: Any) -> None:
    try:
        await client.stop()
    except Exception as error:
        log.warning("stopping %s failed: %s", name, error)


async def _close_globals(globals_: GlobalStores, clean: bool) -> None:
    try:
        await globals_.close(clean=clean)
    except Exception as error:
        log.error("closing the global stores failed: %s", error)


@dataclass(frozen=True)
class _Topics:
    sources: dict[int, tuple[str, ...]]  # source topics by sub-topology
    counts: dict[str, int]  # partition count of every topic the application uses
    internal: dict[str, int]  # the partitions each internal (repartition) topic needs
    layout: TaskLayout


async def _read_topics(
    topology: Topology, settings: AppSettings, admin: TopicAdmin, wait: StartupWait
) -> _Topics:
    """Step 1: the topics the application uses, which must exist, and its task layout."""
    app_id = settings.application_id
    sources = source_topics(topology, app_id)
    internal = {topology.topic_name(t, app_id) for t in topology.internal_topics}
    external = {t for topics in sources.values() for t in topics if t not in internal}
    sinks = {n.topic for n in topology.nodes.values() if isinstance(n, SinkNode) and n.topic}
    globals_ = set(global_topics(topology, app_id))
    # Output topics are the user's: they must exist (the clients never auto-create
    # topics, _aiokafka_logs.py), and a missing one fails here, not at the first record.
    outputs = {topology.topic_name(t, app_id) for t in sinks} - internal
    if "dead_letter" in (
        settings.deserialization_error_handler,
        settings.processing_error_handler,
        settings.production_error_handler,
    ):
        outputs.add(settings.dead_letters)
    used = external | globals_ | outputs | internal
    counts = await wait.call("describing topics", lambda: admin.partition_counts(used))
    missing = sorted(external - set(counts))
    if missing:
        raise SettingsError(f"source topics do not exist: {', '.join(missing)}")
    missing = sorted(globals_ - set(counts))
    if missing:
        raise SettingsError(f"global table topics do not exist: {', '.join(missing)}")
    missing = sorted(outputs - set(counts))
    if missing:
        raise SettingsError(
            f"sink topics do not exist: {', '.join(missing)} (the application "
            "creates only its internal topics; create these first)"
        )
    wanted_internal = internal_topic_partitions(topology, app_id, {t: counts[t] for t in external})
    counts.update({t: n for t, n in wanted_internal.items() if t not in counts})
    layout = TaskLayout(sources, counts)
    layout.check()
    return _Topics(sources, counts, wanted_internal, layout)


async def _create_internal_topics(
    topology: Topology,
    settings: AppSettings,
    admin: TopicAdmin,
    topics: _Topics,
    metrics: AppMetrics,
    wait: StartupWait,
) -> dict[int, dict[str, str]]:
    """Step 2: create the repartition topics and changelogs that are missing (their
    partition counts join ``topics.counts``); return the changelog of each store by
    sub-topology."""
    app_id = settings.application_id
    logs = changelog_topics(topology, app_id)
    changelogs = {t for stores in logs.values() for t in stores.values()}
    internal = {topology.topic_name(t, app_id) for t in topology.internal_topics}
    metrics.name_topics(changelogs, internal - changelogs, settings.dead_letters)
    specs = [TopicSpec(t, n, {}) for t, n in topics.internal.items()]
    for sub, stores in logs.items():
        partitions = topics.layout.partitions_of(sub) if sub in topics.sources else 1
        for store, topic in stores.items():
            topic_config = dict(getattr(topology.store_builder(store), "logging_config", {}) or {})
            topic_config.setdefault("cleanup.policy", "compact")
            specs.append(TopicSpec(topic, partitions, topic_config))
            topics.counts.setdefault(topic, partitions)
    names = [s.name for s in specs]
    existing = await wait.call("describing internal topics", lambda: admin.partition_counts(names))
    missing = [s for s in specs if s.name not in existing]
    await wait.call("creating internal topics", lambda: admin.create_topics(missing))
    return logs


async def _bootstrap_globals(
    started: contextlib.AsyncExitStack,
    settings: AppSettings,
    topology: Topology,
    clients: ClientFactory,
    config: StreamsConfig,
    counts: Mapping[str, int],
) -> tuple[GlobalReader | None, GlobalStores | None]:
    """Step 3, for a topology with global tables: their reader and stores."""
    if not global_topics(topology, settings.application_id):
        return None, None
    reader = clients.global_reader()
    started.push_async_callback(_stop, "global_reader", reader)
    await reader.start()
    stores = GlobalStores(
        topology,
        config,
        settings.state_dir,
        reader,
        counts,
        settings.max_poll_records,
        now_ms(),
    )
    started.push_async_callback(_close_globals, stores, False)
    await stores.bootstrap()
    return reader, stores


async def _start_producer(
    started: contextlib.AsyncExitStack, settings: AppSettings, clients: CountingClients
) -> tuple[RecordProducer, TransactionalProducer | None]:
    """Step 4's producer, and the same again as transactional under exactly-once."""
    producer: RecordProducer
    txn_producer: TransactionalProducer | None = None
    if settings.exactly_once:
        txn_id = transactional_id(settings)
        producer = txn_producer = clients.transactional_producer(txn_id)
        log.info("exactly once: transactional id %s", txn_id)
    else:
        producer = clients.producer()
    started.push_async_callback(_stop, "producer", producer)
    await producer.start()
    return producer, txn_producer


async def _connect(admin: TopicAdmin, settings: AppSettings) -> None:
    """Start the admin client; a retriable failure there means no broker of the bootstrap
    list answered, said in those words: the client library's own error names address
    families and socket tuples, which tell a user nothing they can act on. Its cause is
    kept (``HEADRACE_DEBUG=1`` shows it)."""
    try:
        await admin.start()
    except ClientError as error:
        if not error.retriable:
            raise
        secured = settings.security_protocol != "PLAINTEXT"
        hint = "is one running, and do the credentials hold?" if secured else "is one running?"
        raise ClientError(
            f"cannot reach a broker at {settings.bootstrap_servers} ({hint})", retriable=True
        ) from error


async def start_runtime(
    settings: AppSettings,
    topology: Topology,
    clients: ClientFactory,
    serdes: tuple[Any, Any],
    metrics: AppMetrics,
    host: str,
) -> Runtime:
    """Steps 1-5 of the module docstring; ``host`` is the address the group gets for
    interactive queries."""
    # What starts is stopped again if a later step fails, even a client whose start failed.
    async with contextlib.AsyncExitStack() as started:
        app_id = settings.application_id
        wait = StartupWait(settings.startup_timeout_ms)
        admin = clients.admin()
        started.push_async_callback(_stop, "admin", admin)
        await wait.call("connecting to the cluster", lambda: _connect(admin, settings))
        topics = await _read_topics(topology, settings, admin, wait)
        sources, counts, layout = topics.sources, topics.counts, topics.layout
        topology.check_sink_serdes(*serdes)  # before any topic is made or record read
        logs = await _create_internal_topics(topology, settings, admin, topics, metrics, wait)

        extra: dict[str, Any] = {}
        if settings.deserialization_error_handler is not None:
            extra["deserialization_handler"] = deserialization_handler(
                settings.deserialization_error_handler, settings.dead_letters, metrics
            )
        config = StreamsConfig(
            application_id=app_id,
            state_dir=settings.state_dir,
            default_key_serde=serdes[0],
            default_value_serde=serdes[1],
            **extra,
        )
        global_reader, globals_ = await _bootstrap_globals(
            started, settings, topology, clients, config, counts
        )

        work: AsyncWork | None = None

        def wake() -> None:
            # Async results wake the loop; they come only once tasks run, after start-up.
            if work is not None:
                work.wake()

        tasks = TaskManager(
            topology,
            config,
            settings.state_dir,
            sources,
            logs,
            lambda topic: counts.get(topic, 1),
            now_ms,
            settings.exactly_once,
            global_stores=globals_.stores if globals_ is not None else None,
            wake=wake,
        )

        def running_stores() -> Iterator[tuple[str, str, Any]]:
            """(task id, store name, store) of the running tasks, for the store metrics."""
            for task in tasks.running():
                for name, store in task.executor.stores.items():
                    yield task.id, name, store

        metrics.watch_stores(running_stores)
        processing_errors = ErrorHandler(
            "processing", settings.processing_error_handler, settings.dead_letters, metrics
        )
        production_errors = ErrorHandler(
            "production", settings.production_error_handler, settings.dead_letters, metrics
        )
        counted = CountingClients(clients, metrics)  # records_produced_total
        producer, txn_producer = await _start_producer(started, settings, counted)
        reader = clients.changelog_reader()
        started.push_async_callback(_stop, "reader", reader)
        await reader.start()
        restorer = Restorer(reader, metrics, settings.max_poll_records)
        stateful = {sub for sub, stores in logs.items() if stores and sub in sources}
        standby_reader: ChangelogReader | None = None
        standbys: StandbyUpdater | None = None
        if settings.num_standby_replicas and stateful:
            standby_reader = clients.changelog_reader()
            started.push_async_callback(_stop, "standby_reader", standby_reader)
            await standby_reader.start()
            standbys = StandbyUpdater(standby_reader, metrics, settings.max_poll_records)
        assignor = PartitionGroupAssignor(
            sources,
            host,
            lambda: _local_state(tasks, standbys),
            stateful=stateful,
            standby_replicas=settings.num_standby_replicas,
        )
        consumer = clients.group_consumer(app_id, assignor)
        started.push_async_callback(_stop, "consumer", consumer)
        await consumer.start()
        work = AsyncWork(consumer, processing_errors)
        sink: OffsetSink = (
            TransactionSink(txn_producer, consumer, app_id)
            if txn_producer is not None
            else GroupOffsetSink(consumer)
        )
        committer = Committer(
            producer, sink, production_errors, metrics, settings.snapshot_interval_ms
        )
        stop = asyncio.Event()
        rewinder = Rewinder(counted, settings, committer, consumer, tasks, restorer, stop.is_set)
        runtime = Runtime(
            topology=topology,
            layout=layout,
            counts=counts,
            admin=admin,
            global_reader=global_reader,
            globals=globals_,
            tasks=tasks,
            assignor=assignor,
            processing_errors=processing_errors,
            reader=reader,
            restorer=restorer,
            standby_reader=standby_reader,
            standbys=standbys,
            consumer=consumer,
            async_work=work,
            committer=committer,
            rewinder=rewinder,
            stop=stop,
        )
        started.pop_all()  # running: the App stops it
    return runtime
