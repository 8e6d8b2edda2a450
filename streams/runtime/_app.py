"""``streams.App``: a topology run as a service in a consumer group.

Lifecycle (:class:`AppState`)::

    CREATED -> STARTING -> RUNNING <-> REBALANCING
                  │           │            │
                  └───────────┴──> STOPPING ──> STOPPED
    any of STARTING, RUNNING, REBALANCING, STOPPING --error--> FAILED --> STOPPED

Start-up, step by step: resolve the topology; read the partition counts of its source
topics (and of its global topics, which must exist) and check co-partitioning; create
the internal topics (repartition topics and compacted changelogs) that are missing;
start the HTTP server (its address goes to the group for interactive queries); start
the producer and the changelog reader (and, with standby replicas, the standby reader);
read the global topics to their ends into the global stores (``_global.py``), before
any stream task can open; start the group consumer; subscribe; run the processing loop.

One round of the loop: read what is new on the global topics into the global stores;
poll a batch of records; feed each partition's records to its task; send what the tasks
produced; run due wall-clock punctuations; restore a round of changelog records if any
task is restoring; apply what the standby reader fetched (``_standby.py``); commit when
the interval has passed or a task asked for it (``_commit.py`` owns the commit), then
checkpoint the global stores and the standbys. A lock keeps the rebalance
callbacks, which commit revoked tasks, from interleaving with a round.

Under exactly-once the producer is transactional (started before anything is read, so
its InitProducerId aborts what a predecessor left open) and a failed transaction
rewinds the tasks (``_rewind.py``) instead of stopping the instance.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import signal
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .._config import StreamsConfig
from .._errors import ProcessingError
from .._lifecycle import Lifecycle
from .._nodes import SinkNode
from .._record import ConsumedRecord, ProducedRecord
from .._topology import Topology
from ._aiokafka import AiokafkaClients
from ._assignor import PartitionGroupAssignor
from ._async_work import AsyncWork
from ._client import ClientFactory, RecordProducer, TopicPartition, TopicSpec
from ._commit import Committer, GroupOffsetSink, OffsetSink, TransactionSink
from ._counted import CountingClients
from ._errors import (
    AppStopped,
    ClientError,
    FencedError,
    RuntimeFailure,
    SettingsError,
    TransactionError,
)
from ._gc import tune_for_streaming
from ._global import GlobalStores, global_topics
from ._handlers import ErrorHandler, deserialization_handler
from ._http import HttpServer
from ._metrics import AppMetrics
from ._partition_groups import (
    TaskLayout,
    changelog_topics,
    internal_topic_partitions,
    source_topics,
)
from ._queries import StoreQueries
from ._restore import Restorer
from ._rewind import Rewinder, transactional_id
from ._settings import AppSettings
from ._standby import StandbyTask, StandbyUpdater
from ._tasks import RuntimeTask, TaskManager

log = logging.getLogger("headrace.streams.runtime.app")


class AppState(enum.Enum):
    CREATED = "created"
    STARTING = "starting"
    RUNNING = "running"
    REBALANCING = "rebalancing"
    STOPPING = "stopping"
    STOPPED = "stopped"
    FAILED = "failed"


_S = AppState
APP_TRANSITIONS: Mapping[AppState, frozenset[AppState]] = {
    _S.CREATED: frozenset({_S.STARTING, _S.STOPPED}),
    _S.STARTING: frozenset({_S.RUNNING, _S.REBALANCING, _S.STOPPING, _S.FAILED}),
    _S.RUNNING: frozenset({_S.REBALANCING, _S.STOPPING, _S.FAILED}),
    _S.REBALANCING: frozenset({_S.RUNNING, _S.STOPPING, _S.FAILED}),
    _S.STOPPING: frozenset({_S.STOPPED, _S.FAILED}),
    _S.FAILED: frozenset({_S.STOPPED}),
    _S.STOPPED: frozenset(),
}

TopologySource = Topology | Callable[[], Any] | Any


def resolve_topology(
    source: TopologySource, on_builder: Callable[[Any], None] | None = None
) -> Topology:
    """A Topology, a builder with ``build()`` (``dsl.StreamsBuilder``), or a factory of
    either; ``on_builder`` sees the builder, when there is one (its late-record counts
    become a metric)."""
    if isinstance(source, Topology):
        return source
    if hasattr(source, "build"):
        if on_builder is not None:
            on_builder(source)
        return resolve_topology(source.build(), on_builder)
    if callable(source):
        return resolve_topology(source(), on_builder)
    raise SettingsError(f"not a topology: {source!r}")


_ASYNC_POLL_MS = 5


def _now_ms() -> int:
    return int(time.time() * 1000)


class App:
    """Runs ``topology`` as ``application_id``; see the module docstring for the steps.

    Settings come from keyword arguments, ``HEADRACE_*`` environment variables and an
    optional ``settings_file`` (:class:`AppSettings`). ``default_key_serde`` and
    ``default_value_serde`` apply to nodes that name none.
    """

    def __init__(
        self,
        application_id: str | None = None,
        topology: TopologySource = None,
        *,
        settings: AppSettings | None = None,
        settings_file: str | None = None,
        clients: ClientFactory | None = None,
        default_key_serde: Any = None,
        default_value_serde: Any = None,
        **options: Any,
    ) -> None:
        # What this App was given, without the environment's part where it can tell:
        # ``headrace run`` layers the environment and its flags over it (``build_app``).
        given = {
            k: v for k, v in {"application_id": application_id, **options}.items() if v is not None
        }
        self._given_settings: dict[str, Any] = (
            given
            if settings is None
            else {**settings.model_dump(include=set(settings.model_fields_set)), **given}
        )
        self._settings_file = settings_file
        if settings is None:
            settings = AppSettings.load(settings_file, application_id=application_id, **options)
        elif options or application_id not in (None, settings.application_id):
            settings = settings.model_copy(
                update={
                    k: v
                    for k, v in {"application_id": application_id, **options}.items()
                    if v is not None
                }
            )
            settings = AppSettings.model_validate(settings.model_dump())
        if topology is None:
            raise SettingsError("App needs a topology")
        self.settings = settings
        self._topology_source = topology
        self._clients: ClientFactory = clients or AiokafkaClients(settings)
        self._serdes = (default_key_serde, default_value_serde)
        self._lifecycle = Lifecycle(
            f"app {settings.application_id}", AppState.CREATED, APP_TRANSITIONS
        )
        self.metrics = AppMetrics(settings.application_id)
        self._lock = asyncio.Lock()
        self._stop_requested: asyncio.Event | None = None
        self._loop_task: asyncio.Task[None] | None = None
        self._failure: BaseException | None = None
        self._http: HttpServer | None = None
        self._standbys: StandbyUpdater | None = None
        self._globals: GlobalStores | None = None
        self._counts: dict[str, int] = {}
        self.host = settings.application_server or ""
        self.consumed = 0
        self.produced = 0

    # -- lifecycle ----------------------------------------------------------------------

    @property
    def state(self) -> AppState:
        return self._lifecycle.state

    @property
    def failure(self) -> BaseException | None:
        return self._failure

    def run(self) -> None:
        """Run until SIGTERM or SIGINT, then stop cleanly; raise ``AppStopped`` on failure.

        The process is the application's: the garbage collector is tuned for it
        (``_gc.py``)."""
        asyncio.run(self._run_until_signal())

    async def _run_until_signal(self) -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        try:
            await self.start()
            tune_for_streaming()
            assert self._loop_task is not None
            waiter = asyncio.ensure_future(stop.wait())
            await asyncio.wait({waiter, self._loop_task}, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
        finally:
            await self.stop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
        if self._failure is not None:
            raise AppStopped(
                f"{self.settings.application_id} stopped: {self._failure}"
            ) from self._failure

    async def start(self) -> None:
        """Start up (module docstring) and return once the processing loop runs."""
        self._lifecycle.move(AppState.STARTING)
        settings = self.settings
        try:
            await self._start(settings)
        except BaseException as error:
            self._failure = error
            self._lifecycle.move(AppState.FAILED)
            await self._close_globals()
            await self._close_clients()
            self._lifecycle.move(AppState.STOPPED)
            raise

    async def _start(self, settings: AppSettings) -> None:
        app_id = settings.application_id
        topology = self.topology = resolve_topology(
            self._topology_source,
            lambda builder: self.metrics.watch_late_records(getattr(builder, "late_records", None)),
        )
        sources = source_topics(topology, app_id)
        internal = {topology.topic_name(t, app_id) for t in topology.internal_topics}
        external = {t for topics in sources.values() for t in topics if t not in internal}
        sinks = {n.topic for n in topology.nodes.values() if isinstance(n, SinkNode) and n.topic}
        self._admin = self._clients.admin()
        await self._admin.start()
        globals_ = set(global_topics(topology, app_id))
        # Output topics are the user's: they must exist (the clients never auto-create
        # topics, _no_auto_create.py), and a missing one fails here, not at the first record.
        outputs = {topology.topic_name(t, app_id) for t in sinks} - internal
        if "dead_letter" in (
            settings.deserialization_error_handler,
            settings.processing_error_handler,
            settings.production_error_handler,
        ):
            outputs.add(settings.dead_letters)
        counts = await self._admin.partition_counts(external | globals_ | outputs | internal)
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
        wanted_internal = internal_topic_partitions(
            topology, app_id, {t: counts[t] for t in external}
        )
        counts.update({t: n for t, n in wanted_internal.items() if t not in counts})
        layout = TaskLayout(sources, counts)
        layout.check()
        topology.check_sink_serdes(*self._serdes)  # before any topic is made or record read
        logs = changelog_topics(topology, app_id)
        changelogs = {t for stores in logs.values() for t in stores.values()}
        self.metrics.name_topics(changelogs, internal - changelogs, settings.dead_letters)
        specs = [TopicSpec(t, n, {}) for t, n in wanted_internal.items()]
        for sub, stores in logs.items():
            partitions = layout.partitions_of(sub) if sub in sources else 1
            for store, topic in stores.items():
                topic_config = dict(
                    getattr(topology.store_builder(store), "logging_config", {}) or {}
                )
                topic_config.setdefault("cleanup.policy", "compact")
                specs.append(TopicSpec(topic, partitions, topic_config))
                counts.setdefault(topic, partitions)
        existing = await self._admin.partition_counts([s.name for s in specs])
        await self._admin.create_topics([s for s in specs if s.name not in existing])
        self._counts = counts
        self._layout = layout

        if settings.http_port is not None:
            self._queries = StoreQueries(self)
            self._http = HttpServer(settings.http_host, settings.http_port, self._queries.routes())
            await self._http.start()
            self.host = settings.application_server or self._http.address
            log.info("listening on http://%s (health, metrics, stores)", self._http.address)

        extra: dict[str, Any] = {}
        if settings.deserialization_error_handler is not None:
            extra["deserialization_handler"] = deserialization_handler(
                settings.deserialization_error_handler, settings.dead_letters, self.metrics
            )
        config = StreamsConfig(
            application_id=app_id,
            state_dir=settings.state_dir,
            default_key_serde=self._serdes[0],
            default_value_serde=self._serdes[1],
            **extra,
        )
        if globals_:
            self._global_reader = self._clients.global_reader()
            await self._global_reader.start()
            self._globals = GlobalStores(
                topology,
                config,
                settings.state_dir,
                self._global_reader,
                counts,
                settings.max_poll_records,
                _now_ms(),
            )
            await self._globals.bootstrap()
        self.tasks = TaskManager(
            topology,
            config,
            settings.state_dir,
            sources,
            logs,
            lambda topic: self._counts.get(topic, 1),
            _now_ms,
            settings.exactly_once,
            global_stores=self._globals.stores if self._globals is not None else None,
            wake=lambda: self._async.wake(),
        )
        self.metrics.watch_stores(self._running_stores)
        stateful = {sub for sub, stores in logs.items() if stores and sub in sources}
        self.assignor = PartitionGroupAssignor(
            sources,
            self.host,
            self._local_state,
            stateful=stateful,
            standby_replicas=settings.num_standby_replicas,
        )
        self._processing_errors = ErrorHandler(
            "processing", settings.processing_error_handler, settings.dead_letters, self.metrics
        )
        production_errors = ErrorHandler(
            "production", settings.production_error_handler, settings.dead_letters, self.metrics
        )
        self._producer: RecordProducer
        counted = CountingClients(self._clients, self.metrics)  # records_produced_total
        if settings.exactly_once:
            txn_id = transactional_id(settings)
            txn_producer = counted.transactional_producer(txn_id)
            self._producer = txn_producer
            log.info("exactly once: transactional id %s", txn_id)
        else:
            self._producer = counted.producer()
        await self._producer.start()
        self._reader = self._clients.changelog_reader()
        await self._reader.start()
        self._restorer = Restorer(self._reader, self.metrics, settings.max_poll_records)
        if settings.num_standby_replicas and stateful:
            self._standby_reader = self._clients.changelog_reader()
            await self._standby_reader.start()
            self._standbys = StandbyUpdater(
                self._standby_reader, self.metrics, settings.max_poll_records
            )
        self._consumer = self._clients.group_consumer(app_id, self.assignor)
        await self._consumer.start()
        self._async = AsyncWork(self._consumer, self._processing_errors)
        sink: OffsetSink = (
            TransactionSink(txn_producer, self._consumer, app_id)
            if settings.exactly_once
            else GroupOffsetSink(self._consumer)
        )
        self._committer = Committer(
            self._producer, sink, production_errors, self.metrics, settings.snapshot_interval_ms
        )
        self._rewinder = Rewinder(
            counted,
            settings,
            self._committer,
            self._consumer,
            self.tasks,
            self._restorer,
            lambda: self._stop_requested is not None and self._stop_requested.is_set(),
        )
        self._consumer.subscribe(
            sorted({t for topics in sources.values() for t in topics}),
            self._on_revoked,
            self._on_assigned,
        )
        self._stop_requested = asyncio.Event()
        self._loop_task = asyncio.create_task(self._loop(), name=f"streams-{app_id}")
        self._lifecycle.move(AppState.RUNNING)
        log.info("%s started against %s", app_id, settings.bootstrap_servers)

    async def stop(self) -> None:
        """Stop processing, commit, close tasks, leave the group; idempotent."""
        if self.state in (AppState.STOPPED, AppState.CREATED):
            if self.state is AppState.CREATED:
                self._lifecycle.move(AppState.STOPPED)
            return
        if self._stop_requested is not None:
            self._stop_requested.set()
        if self._loop_task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._loop_task

    # -- the loop -----------------------------------------------------------------------

    async def _loop(self) -> None:
        assert self._stop_requested is not None
        settings = self.settings
        last_commit = last_punctuate = time.monotonic()
        interval = settings.commit_interval / 1000
        try:
            while not self._stop_requested.is_set():
                timeout = 0 if self._restorer.busy else settings.poll_timeout_ms
                if self._async.ready.is_set():
                    timeout = 0
                elif timeout and self._async.busy(self.tasks.running()):
                    # Results that finish meanwhile do not wake a poll: come back soon.
                    timeout = min(timeout, _ASYNC_POLL_MS)
                batches = await self._consumer.poll(timeout, settings.max_poll_records)
                async with self._lock:
                    if self._globals is not None:
                        await self._globals.poll(0)
                    await self._process(batches)
                    now = time.monotonic()
                    if now - last_punctuate >= 0.05:
                        last_punctuate = now
                        await self._punctuate()
                    if self._restorer.busy:
                        for task in await self._restorer.step(50):
                            self._consumer.resume(task.sources)
                    if self._standbys is not None:
                        await self._standbys.step(0)
                    running = self.tasks.running()
                    if now - last_commit >= interval or any(
                        t.executor.commit_requested for t in running
                    ):
                        try:
                            await self._commit(running, closing=False)
                        except (TransactionError, FencedError) as error:
                            await self._rewind(error)
                        if self._globals is not None:
                            await self._globals.checkpoint()
                        if self._standbys is not None:
                            self._standbys.checkpoint()
                        # Commits start an interval apart, as in Kafka Streams: timed from
                        # the end, each would add its own duration to how long the next
                        # interval's results wait (under exactly-once, to their latency).
                        last_commit = now
                        self._observe_lag(running)
        except Exception as error:
            self._failure = error
            # The runtime's own errors say what went wrong; a traceback is for the others.
            log.error(
                "%s failed: %s",
                settings.application_id,
                error,
                exc_info=None if isinstance(error, RuntimeFailure) else error,
            )
        finally:
            await self._shutdown()

    async def _commit(self, tasks: list[RuntimeTask], closing: bool = True) -> None:
        """Commit ``tasks``; under exactly-once their async calls finish first and
        their output joins the transaction (``_async_work.py``). The loop's commits
        (not ``closing``) finish while processing goes on (``Committer.begin``)."""
        if self.settings.exactly_once:
            out = await self._async.settle(tasks)
            if out:
                self.produced += len(out)
                await self._committer.send(out)
        if not closing:
            await self._committer.begin(tasks)
            return
        await self._committer.commit(tasks, closing)

    async def _rewind(self, error: TransactionError | FencedError) -> None:
        """A transaction was aborted: rewind the tasks (``_rewind.py``); a fenced
        instance that must stop raises ``FencedError`` out of the loop."""
        await self._rewinder.rewind(error)
        self._producer = self._committer.producer
        self._count_tasks()

    async def _process(self, batches: dict[TopicPartition, list[ConsumedRecord]]) -> None:
        """Feed each task its records and send what comes out. A round that found no
        backlog (fewer records than a poll may take) also forwards what the tasks'
        caches hold, so at low load a result leaves with its record instead of at the
        commit; under backlog the caches keep folding updates until the commit. Under
        exactly-once a result is visible only at the commit anyway, so the caches wait."""
        out: list[ProducedRecord] = []
        by_partition = self.tasks.by_partition
        consumed, latency = self.metrics.records_consumed, self.metrics.process_latency
        fed: dict[str, RuntimeTask] = {}
        batches = self._async.with_held(batches, by_partition)
        for tp, records in batches.items():
            task = by_partition.get(tp)
            if task is None or not task.running or not records:
                if records and task is not None:
                    # Fetched before the partition was paused for restoring: fetch them
                    # again once the task runs, or they would be skipped.
                    self._consumer.seek(tp, records[0][2])
                elif records:
                    log.warning("dropping %d records of %s-%d: no task", len(records), *tp)
                continue
            if task.executor.has_async:
                records = self._async.admit(task, tp, records)
                if not records:
                    continue
            started = time.perf_counter()
            try:
                out.extend(task.process(tp, records))
            except ProcessingError as error:
                if self._processing_errors.fails:
                    raise
                out.extend(self._replay(task, tp, records, error))
            latency.labels(task.id).observe(time.perf_counter() - started)
            consumed.labels(task.id).inc(len(records))
            self.consumed += len(records)
            fed[task.id] = task
        out.extend(self._async.release(self.tasks.running()))
        if (
            fed
            and not self.settings.exactly_once
            and (sum(map(len, batches.values())) < self.settings.max_poll_records)
        ):
            for task in fed.values():
                out.extend(task.forward_cached())
        if out:
            self.produced += len(out)
            await self._committer.send(out)

    def _replay(
        self,
        task: RuntimeTask,
        tp: TopicPartition,
        records: list[ConsumedRecord],
        first: ProcessingError,
    ) -> list[ProducedRecord]:
        """A batch failed: drop its partial output and process it record by record,
        giving each failing record to the processing handler. Store writes the failed
        batch made before the error stay (at-least-once)."""
        task.executor.drain()
        out: list[ProducedRecord] = []
        for record in records:
            try:
                out.extend(task.process(tp, [record]))
            except ProcessingError as error:
                task.executor.drain()
                task.next_offsets[tp] = record[2] + 1
                out.extend(self._processing_errors.consumed(record, error.__cause__ or error))
        return out

    async def _punctuate(self) -> None:
        now = _now_ms()
        started = time.perf_counter()
        ran = False
        out: list[ProducedRecord] = []
        for task in self.tasks.running():
            if task.executor.punctuate_wall_clock(now):
                task.dirty = ran = True
            out.extend(task.executor.drain())
        if ran:
            self.metrics.punctuation_latency.observe(time.perf_counter() - started)
        if out:
            self.produced += len(out)
            await self._committer.send(out)

    def _observe_lag(self, tasks: list[RuntimeTask]) -> None:
        for task in tasks:
            for tp in task.sources:
                high = self._consumer.highwater(tp)
                position = task.next_offsets.get(tp)
                if high is not None and position is not None:
                    self.metrics.consumer_lag.labels(tp[0], str(tp[1])).set(max(0, high - position))

    # -- rebalances ---------------------------------------------------------------------

    async def _on_revoked(self, revoked: set[TopicPartition]) -> None:
        """Commit every running task before the group reassigns anything; tasks that
        stay with this instance keep running, the others close when the new assignment
        arrives."""
        if self.state is AppState.RUNNING:
            self._lifecycle.move(AppState.REBALANCING)
        async with self._lock:
            if self._failure is not None:
                return
            try:
                await self._commit(self.tasks.running())
            except (TransactionError, FencedError) as error:
                # Aborted: every task rewinds; the new assignment reopens them from
                # their snapshots at the committed offsets.
                log.warning("commit on revocation aborted: %s", error)
                self._rewinder.close_all()
                try:
                    await self._rewinder.renew_producer(error)
                except FencedError as fatal:
                    # Fenced again: another instance holds our id; stop, do not fight it.
                    self._failure = fatal
                    if self._stop_requested is not None:
                        self._stop_requested.set()
                self._producer = self._committer.producer
            except ClientError as error:
                log.warning("commit on revocation failed: %s", error)

    async def _on_assigned(self, assigned: set[TopicPartition]) -> None:
        """Close tasks that moved away; open new ones paused until restored, taking over
        the stores of this instance's standby of a task when it has one; then close the
        standbys no longer wanted and open the new ones."""
        self.metrics.rebalances.inc()
        async with self._lock:
            # A commit still finishing covers tasks that may close now.
            await self._committer.settle(keep_error=True)
            gone = [t for t in self.tasks.tasks.values() if not set(t.sources) <= assigned]
            for task in gone:
                if not task.running:
                    self._restorer.drop(task)
                task.close()
            self.tasks.forget(gone)
            promoted = await self._take_standbys(assigned)
            for task in self.tasks.open(assigned, promoted):
                self._consumer.pause(task.sources)
                if await self._restorer.add(task):
                    self._consumer.resume(task.sources)
            await self._assign_standbys()
            self._count_tasks()
        log.info(
            "assignment: tasks %s%s",
            sorted(self.tasks.tasks),
            f", standbys {sorted(self._standbys.tasks)}" if self._standbys else "",
        )
        if self.state is AppState.REBALANCING:
            self._lifecycle.move(AppState.RUNNING)

    async def _take_standbys(self, assigned: set[TopicPartition]) -> dict[str, StandbyTask]:
        """The standbys of tasks now assigned to this instance, no longer updated."""
        if self._standbys is None:
            return {}
        ids = {self.tasks.task_of(tp) for tp in assigned} - set(self.tasks.tasks)
        taken = [await self._standbys.remove(t) for t in sorted(i for i in ids if i)]
        return {t.id: t for t in taken if t is not None}

    async def _assign_standbys(self) -> None:
        if self._standbys is None:
            return
        wanted = set(self.assignor.view.standby) - set(self.tasks.tasks)
        for task_id in sorted(set(self._standbys.tasks) - wanted):
            standby = await self._standbys.remove(task_id)
            if standby is not None:
                standby.close()
        for task_id in sorted(wanted - set(self._standbys.tasks)):
            await self._standbys.add(self.tasks.open_standby(task_id))

    def _running_stores(self) -> Iterator[tuple[str, str, Any]]:
        """(task id, store name, store) of the running tasks, for the store metrics."""
        for task in self.tasks.running():
            for name, store in task.executor.stores.items():
                yield task.id, name, store

    def _local_state(self) -> dict[str, int]:
        """Changelog offset sums of the tasks this instance has state for (assignor)."""
        sums = self.tasks.local_state()
        if self._standbys is not None:
            sums.update(self._standbys.offset_sums())
        return sums

    def _count_tasks(self) -> None:
        states: dict[str, int] = {"restoring": 0, "running": 0, "standby": 0}
        for task in self.tasks.tasks.values():
            states[task.state.value] = states.get(task.state.value, 0) + 1
        if self._standbys is not None:
            states["standby"] = len(self._standbys.tasks)
        for name, n in states.items():
            self.metrics.tasks.labels(name).set(n)

    # -- shutdown -----------------------------------------------------------------------

    async def _shutdown(self) -> None:
        """Final commit (unless failed), close tasks, leave the group, close clients."""
        failed = self._failure is not None
        self._lifecycle.move(AppState.FAILED if failed else AppState.STOPPING)
        if not failed:
            try:
                async with self._lock:
                    await self._commit(self.tasks.running())
            except Exception as error:
                self._failure = error
                log.error("final commit failed: %s", error)
        if self._failure is not None and hasattr(self, "_committer"):
            # Nothing of a failed instance may commit; its tasks close unclean.
            await self._committer.abort()
            for task in self.tasks.tasks.values():
                task.dirty = True
        for task in list(self.tasks.tasks.values()):
            try:
                task.close()
            except Exception as error:
                log.error("closing task %s failed: %s", task.id, error)
        self.tasks.forget(list(self.tasks.tasks.values()))
        standbys = getattr(self, "_standbys", None)
        if standbys is not None:
            standbys.close_all()
        await self._close_globals()
        await self._close_clients()
        if self.state is AppState.STOPPING and self._failure is not None:
            self._lifecycle.move(AppState.FAILED)
        self._lifecycle.move(AppState.STOPPED)
        log.info(
            "%s stopped%s",
            self.settings.application_id,
            f" after an error: {self._failure}" if self._failure else "",
        )

    async def _close_globals(self) -> None:
        """After the stream tasks, which read the global stores until they close."""
        globals_ = getattr(self, "_globals", None)
        if globals_ is None:
            return
        try:
            await globals_.close(clean=self._failure is None)
        except Exception as error:
            log.error("closing the global stores failed: %s", error)

    async def _close_clients(self) -> None:
        for name in (
            "_consumer",
            "_producer",
            "_reader",
            "_standby_reader",
            "_global_reader",
            "_admin",
        ):
            client = getattr(self, name, None)
            if client is not None:
                try:
                    await client.stop()
                except Exception as error:
                    log.warning("stopping %s failed: %s", name.strip("_"), error)
        if self._http is not None:
            await self._http.stop()

    # -- status -------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        tasks = getattr(self, "tasks", None)
        open_tasks = tasks.tasks.values() if tasks is not None else ()
        restorer = getattr(self, "_restorer", None)
        standbys = getattr(self, "_standbys", None)
        return {
            "application_id": self.settings.application_id,
            "state": self.state.value,
            "host": self.host,
            "tasks": sorted(t.id for t in open_tasks if t.running),
            "restoring": sorted(t.id for t in open_tasks if not t.running),
            "standby": sorted(standbys.tasks) if standbys is not None else [],
            "restore_remaining": restorer.remaining() if restorer is not None else 0,
            "consumed": self.consumed,
            "produced": self.metrics.produced_total,  # delivered, as records_produced_total
        }

    def partition_count(self, topic: str) -> int:
        return self._counts.get(topic, 1)

    def sources_of(self, subtopology: int) -> tuple[str, ...]:
        """The source topics of ``subtopology`` (known once started)."""
        layout: TaskLayout | None = getattr(self, "_layout", None)
        return layout.sources.get(subtopology, ()) if layout is not None else ()

    @property
    def default_key_serde(self) -> Any:
        """The serde of keys no node names one for (``None``: bytes)."""
        return self._serdes[0]

    @property
    def global_stores(self) -> GlobalStores | None:
        """The global stores; ``None`` until start-up creates them, or without global tables."""
        return self._globals
