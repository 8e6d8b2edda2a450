"""``streams.App``: a topology run as a service in a consumer group.

Lifecycle (:class:`AppState`)::

    CREATED -> STARTING -> RUNNING <-> REBALANCING
                  │           │            │
                  └───────────┴──> STOPPING ──> STOPPED
    any of STARTING, RUNNING, REBALANCING, STOPPING --error--> FAILED --> STOPPED

Start-up, step by step: resolve the topology; enter the App's lifespans (what it opens
for its own code, such as an HTTP client session: ``_lifespan.py``); start the HTTP
server (its address goes to the group for interactive queries); build the
:class:`~._startup.Runtime` (``_startup.py``): read the partition counts of the source topics (and of the global
topics, which must exist) and check co-partitioning; create the internal topics
(repartition topics and compacted changelogs) that are missing; read the global topics
to their ends into the global stores (``_global.py``), before any stream task can open;
start the producer and the changelog reader (and, with standby replicas, the standby
reader); start the group consumer. Then subscribe and run the processing loop. Until
start-up is done the App holds no runtime; once it is, the App holds the whole of it.

The processing loop (``_processing.py``) runs rounds of records through the tasks
until SIGTERM, SIGINT or a failure, and the consumer's rebalance callbacks
(``_rebalance.py``) commit, close and open tasks as the group's assignment changes;
a lock keeps the two from interleaving. Shutting down, step by step: a final commit
(unless failed; a failed instance aborts what is open instead), close the tasks and
the standbys, close the global stores, stop the clients and the HTTP server, exit the
lifespans.

Under exactly-once the producer is transactional (started before anything is read, so
its InitProducerId aborts what a predecessor left open) and a failed transaction
rewinds the tasks (``_rewind.py``) instead of stopping the instance.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import functools
import logging
import os
import signal
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import SecretStr

from .._lifecycle import Lifecycle
from .._topology import Topology
from ._aiokafka import AiokafkaClients
from ._assignor import PartitionGroupAssignor
from ._client import ClientFactory, TopicPartition
from ._errors import AppStopped, RuntimeFailure, SettingsError
from ._gc import tune_for_streaming
from ._global import GlobalStores
from ._http import HttpServer
from ._lifespan import Lifespan, Lifespans
from ._metrics import AppMetrics
from ._processing import ProcessingLoop
from ._queries import StoreQueries
from ._rebalance import Rebalance
from ._settings import (
    Acks,
    AppSettings,
    Compression,
    ErrorAction,
    Guarantee,
    LogFormat,
    LogLevel,
    OffsetReset,
    SaslMechanism,
    SecurityProtocol,
)
from ._startup import Runtime, start_runtime
from ._tasks import TaskManager

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
# App's keyword parameters that are settings (``application_id`` is passed on apart).
_SETTING_KEYWORDS = frozenset(AppSettings.model_fields) - {"application_id"}
_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class App:
    """Runs ``topology`` as ``application_id``; see the module docstring for the steps.

    Settings come from keyword arguments, ``HEADRACE_*`` environment variables and an
    optional ``settings_file`` (:class:`AppSettings`, which says which wins). Every
    setting's keyword defaults to ``None``, "not given": the setting then comes from the
    environment, the file, or its default (in parentheses below).

    :param application_id: the consumer group, and the prefix of the internal topics and
        of the state directory (required here, in the file or in the environment).
    :param topology: a ``Topology``, a ``StreamsBuilder``, or a function returning either.
    :param settings: settings read beforehand; the keywords given here replace theirs.
    :param settings_file: a TOML file of settings (JSON when its name ends in ``.json``).
    :param clients: what opens the Kafka clients (aiokafka's, unless a test gives others).
    :param default_key_serde: the serde of keys for nodes that name none.
    :param default_value_serde: the serde of values for nodes that name none.
    :param bootstrap_servers: ``host:port`` of brokers, comma-separated (127.0.0.1:9092).
    :param processing_guarantee: ``"at_least_once"`` or ``"exactly_once_v2"`` (at least once).
    :param state_dir: where the tasks' state stores live (``headrace-streams`` in the
        system's temporary directory).
    :param commit_interval_ms: between commits (1000; 100 under exactly-once).
    :param num_standby_replicas: warm copies of each task's stores kept by other instances (0).
    :param http_host: the address the HTTP server (health, metrics, queries) listens on.
    :param http_port: its port; ``0`` picks a free one (no HTTP server unless given).
    :param application_server: ``host:port`` other instances reach this one's queries at
        (the HTTP server's address).
    :param max_poll_records: records per poll, and per processing round (5000).
    :param poll_timeout_ms: how long a poll waits for records (100).
    :param fetch_max_bytes: the most a fetch returns (64 MiB).
    :param max_partition_fetch_bytes: the most a fetch returns per partition (8 MiB).
    :param producer_batch_bytes: the producer's batch size (1 MiB).
    :param linger_ms: how long the producer waits to fill a batch (5).
    :param acks: the producer's acknowledgements (``"all"``).
    :param compression_type: of the produced batches (``"none"``).
    :param auto_offset_reset: where a partition without a committed offset starts
        (``"earliest"``).
    :param session_timeout_ms: after which the group drops a silent instance (10000).
    :param startup_timeout_ms: how long start-up waits, in all, for a cluster that answers
        with retriable errors (60000).
    :param instance_id: this instance's name in its transactional id under exactly-once
        (a name kept in the state directory).
    :param transaction_timeout_ms: after which the broker aborts an open transaction of
        this instance (half the session timeout; must be below it).
    :param snapshot_interval_ms: how often an exactly-once commit also snapshots the
        RocksDB stores (5000).
    :param heartbeat_interval_ms: between heartbeats to the group; at most a third of the
        session timeout (1000).
    :param deserialization_error_handler: what a record that cannot be read does:
        ``"fail"``, ``"continue"`` or ``"dead_letter"`` (the topology's own).
    :param processing_error_handler: what a record whose processing raised does (``"fail"``).
    :param production_error_handler: what a record the broker refused does (``"fail"``).
    :param dead_letter_topic: where ``"dead_letter"`` sends records
        (``<application_id>-dead-letters``).
    :param log_format: ``"text"`` or ``"json"`` (text).
    :param log_level: ``"DEBUG"``, ``"INFO"``, ``"WARNING"`` or ``"ERROR"`` (INFO).
    :param security_protocol: how every client reaches the cluster (``"PLAINTEXT"``).
    :param sasl_mechanism: ``"PLAIN"``, ``"SCRAM-SHA-256"`` or ``"SCRAM-SHA-512"``.
    :param sasl_username: the SASL user.
    :param sasl_password: the SASL password (shown as asterisks wherever settings are).
    :param ssl_cafile: the certificate authorities that sign the brokers' certificates.
    :param ssl_certfile: this client's certificate, for mutual TLS.
    :param ssl_keyfile: its private key.
    :param ssl_password: the private key's password.
    :param ssl_check_hostname: whether a broker's certificate must name its host (true).
    :param replication_factor: of the internal topics (-1: the broker's default).
    :param topic_configs: configs of the internal topics, as Kafka Streams' ``topic.``-
        prefixed ones (``{"min.insync.replicas": "2"}``).
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
        bootstrap_servers: str | None = None,
        processing_guarantee: Guarantee | None = None,
        state_dir: str | os.PathLike[str] | None = None,
        commit_interval_ms: int | None = None,
        num_standby_replicas: int | None = None,
        http_host: str | None = None,
        http_port: int | None = None,
        application_server: str | None = None,
        max_poll_records: int | None = None,
        poll_timeout_ms: int | None = None,
        fetch_max_bytes: int | None = None,
        max_partition_fetch_bytes: int | None = None,
        producer_batch_bytes: int | None = None,
        linger_ms: int | None = None,
        acks: Acks | None = None,
        compression_type: Compression | None = None,
        auto_offset_reset: OffsetReset | None = None,
        session_timeout_ms: int | None = None,
        startup_timeout_ms: int | None = None,
        instance_id: str | None = None,
        transaction_timeout_ms: int | None = None,
        snapshot_interval_ms: int | None = None,
        heartbeat_interval_ms: int | None = None,
        deserialization_error_handler: ErrorAction | None = None,
        processing_error_handler: ErrorAction | None = None,
        production_error_handler: ErrorAction | None = None,
        dead_letter_topic: str | None = None,
        log_format: LogFormat | None = None,
        log_level: LogLevel | None = None,
        security_protocol: SecurityProtocol | None = None,
        sasl_mechanism: SaslMechanism | None = None,
        sasl_username: str | None = None,
        sasl_password: str | SecretStr | None = None,
        ssl_cafile: str | os.PathLike[str] | None = None,
        ssl_certfile: str | os.PathLike[str] | None = None,
        ssl_keyfile: str | os.PathLike[str] | None = None,
        ssl_password: str | SecretStr | None = None,
        ssl_check_hostname: bool | None = None,
        replication_factor: int | None = None,
        topic_configs: Mapping[str, str] | None = None,
    ) -> None:
        # The settings given, by name, taken before any other local exists: each keyword after
        # ``default_value_serde`` is a field of AppSettings (a test keeps the two lists equal).
        options = {k: v for k, v in locals().items() if k in _SETTING_KEYWORDS and v is not None}
        # What this App was given, without the environment's part where it can tell:
        # ``headrace run`` layers the environment and its flags over it (``reconfigured``).
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
        self._failure: BaseException | None = None
        self._http: HttpServer | None = None
        # Set together once start-up is done; ``None`` before (and after a failed start).
        self._runtime: Runtime | None = None
        self._processing: ProcessingLoop | None = None
        self._loop_task: asyncio.Task[None] | None = None
        self.host = settings.application_server or ""
        self._lifespans = Lifespans()

    def reconfigured(
        self,
        environment: Mapping[str, str],
        settings_file: str | None = None,
        **options: Any,
    ) -> App:
        """A new App of this App's topology and serdes, its settings read again: each from
        the first of ``options`` (``None``: not given), ``environment`` (``HEADRACE_*``),
        this App's own arguments, ``settings_file``, this App's own settings file, the
        defaults. What ``headrace run`` runs."""
        settings = AppSettings.load(
            [self._settings_file, settings_file],
            environment,
            base=self._given_settings,
            **options,
        )
        app = App(
            topology=self._topology_source,
            settings=settings,
            default_key_serde=self._serdes[0],
            default_value_serde=self._serdes[1],
        )
        app._lifespans = Lifespans(self._lifespans.registered)
        return app

    def lifespan(self, fn: Lifespan) -> Lifespan:
        """Register ``fn(app)``, an async generator function (or one returning an async
        context manager): the part before its ``yield`` runs when the App starts, before
        the first record; the part after, when it stops, after the last async call
        (``_lifespan.py``). Returns ``fn``, so it reads as a decorator."""
        return self._lifespans.add(fn)

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
        asyncio.run(self.serve())

    async def serve(
        self,
        *,
        started: Callable[[], object] | None = None,
        status: Callable[[], object] | None = None,
        status_interval: float = 0.0,
    ) -> None:
        """Start, run until SIGTERM or SIGINT or a failure, then stop cleanly; raise
        ``AppStopped`` on failure. ``started`` is called once the processing loop runs,
        ``status`` every ``status_interval`` seconds (``0``: never) while it runs. The
        garbage collector is tuned for the process (``_gc.py``)."""
        loop = asyncio.get_running_loop()
        signalled = asyncio.Event()
        for sig in _SIGNALS:
            loop.add_signal_handler(sig, signalled.set)
        try:
            await self.start()
            tune_for_streaming()
            if started is not None:
                started()
            await self._wait(signalled, status, status_interval)
        finally:
            with contextlib.suppress(asyncio.CancelledError):
                await self.stop()
            for sig in _SIGNALS:
                loop.remove_signal_handler(sig)
        if self._failure is not None:
            raise AppStopped(
                f"{self.settings.application_id} stopped: {self._failure}"
            ) from self._failure

    async def _wait(
        self,
        signalled: asyncio.Event,
        status: Callable[[], object] | None,
        status_interval: float,
    ) -> None:
        """Until ``signalled`` or the processing loop ends, calling ``status`` on time."""
        assert self._loop_task is not None  # started
        loop_task = self._loop_task
        waiter = asyncio.ensure_future(signalled.wait())
        try:
            while not waiter.done() and not loop_task.done():
                await asyncio.wait(
                    {waiter, loop_task},
                    timeout=status_interval or None,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if status is not None and status_interval and not waiter.done():
                    status()
        finally:
            waiter.cancel()

    async def start(self) -> None:
        """Start up (module docstring) and return once the processing loop runs."""
        self._lifecycle.move(AppState.STARTING)
        settings = self.settings
        try:
            topology = resolve_topology(
                self._topology_source,
                lambda builder: self.metrics.watch_late_records(
                    getattr(builder, "late_records", None)
                ),
            )
            await self._lifespans.enter(self)
            if settings.http_port is not None:
                self._http = HttpServer(
                    settings.http_host, settings.http_port, StoreQueries(self, topology).routes()
                )
                await self._http.start()
                self.host = settings.application_server or self._http.address
                log.info("listening on http://%s (health, metrics, stores)", self._http.address)
            runtime = await start_runtime(
                settings, topology, self._clients, self._serdes, self.metrics, self.host
            )
            processing = ProcessingLoop(runtime, settings, self.metrics, self._lock)
            rebalance = Rebalance(
                runtime,
                self.metrics,
                self._lock,
                processing.commit,
                lambda: self._failure,
                functools.partial(self._fail, runtime),
            )
            try:
                runtime.consumer.subscribe(
                    sorted({t for topics in runtime.layout.sources.values() for t in topics}),
                    functools.partial(self._on_revoked, rebalance),
                    functools.partial(self._on_assigned, rebalance),
                )
            except BaseException:
                await runtime.close_globals(clean=False)
                await runtime.stop_clients()
                raise
        except BaseException as error:
            self._failure = error
            self._lifecycle.move(AppState.FAILED)
            if self._http is not None:
                await self._http.stop()
            await self._lifespans.exit()
            self._lifecycle.move(AppState.STOPPED)
            raise
        self._runtime, self._processing = runtime, processing
        app_id = settings.application_id
        self._loop_task = asyncio.create_task(
            self._run(runtime, processing), name=f"streams-{app_id}"
        )
        self._lifecycle.move(AppState.RUNNING)
        log.info("%s started against %s", app_id, settings.bootstrap_servers)

    async def stop(self) -> None:
        """Stop processing, commit, close tasks, leave the group; idempotent."""
        if self.state in (AppState.STOPPED, AppState.CREATED):
            if self.state is AppState.CREATED:
                self._lifecycle.move(AppState.STOPPED)
            return
        if self._runtime is not None:
            self._runtime.stop.set()
        if self._loop_task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._loop_task

    # -- the loop (its rounds are ``_processing.py``'s) -----------------------------------

    async def _run(self, rt: Runtime, processing: ProcessingLoop) -> None:
        """Run the processing loop until it is stopped or fails, then shut down."""
        try:
            await processing.run()
        except Exception as error:
            self._failure = error
            # The runtime's own errors say what went wrong; a traceback is for the others.
            log.error(
                "%s failed: %s",
                self.settings.application_id,
                error,
                exc_info=None if isinstance(error, RuntimeFailure) else error,
            )
        finally:
            await self._shutdown(rt, processing)

    # -- rebalances (the work is ``_rebalance.py``'s) ------------------------------------

    async def _on_revoked(self, rebalance: Rebalance, revoked: set[TopicPartition]) -> None:
        if self.state is AppState.RUNNING:
            self._lifecycle.move(AppState.REBALANCING)
        await rebalance.revoked(revoked)

    async def _on_assigned(self, rebalance: Rebalance, assigned: set[TopicPartition]) -> None:
        await rebalance.assigned(assigned)
        if self.state is AppState.REBALANCING:
            self._lifecycle.move(AppState.RUNNING)

    def _fail(self, rt: Runtime, error: BaseException) -> None:
        """Stop the instance for ``error``: the loop ends and shuts down as failed."""
        self._failure = error
        rt.stop.set()

    # -- shutdown -----------------------------------------------------------------------

    async def _shutdown(self, rt: Runtime, processing: ProcessingLoop) -> None:
        """Final commit (unless failed), close tasks, leave the group, close clients."""
        failed = self._failure is not None
        self._lifecycle.move(AppState.FAILED if failed else AppState.STOPPING)
        tasks = rt.tasks
        if not failed:
            try:
                async with self._lock:
                    await processing.commit(tasks.running())
            except Exception as error:
                self._failure = error
                log.error("final commit failed: %s", error)
        if self._failure is not None:
            # Nothing of a failed instance may commit; its tasks close unclean.
            await rt.committer.abort()
            for task in tasks.tasks.values():
                task.dirty = True
        for task in list(tasks.tasks.values()):
            try:
                task.close()
            except Exception as error:
                log.error("closing task %s failed: %s", task.id, error)
        tasks.forget(list(tasks.tasks.values()))
        if rt.standbys is not None:
            rt.standbys.close_all()
        await rt.close_globals(clean=self._failure is None)
        await rt.stop_clients()
        if self._http is not None:
            await self._http.stop()
        await self._lifespans.exit()
        if self.state is AppState.STOPPING and self._failure is not None:
            self._lifecycle.move(AppState.FAILED)
        self._lifecycle.move(AppState.STOPPED)
        log.info(
            "%s stopped%s",
            self.settings.application_id,
            f" after an error: {self._failure}" if self._failure else "",
        )

    # -- status -------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        rt = self._runtime
        open_tasks = rt.tasks.tasks.values() if rt is not None else ()
        return {
            "application_id": self.settings.application_id,
            "state": self.state.value,
            "host": self.host,
            "tasks": sorted(t.id for t in open_tasks if t.running),
            "restoring": sorted(t.id for t in open_tasks if not t.running),
            "standby": sorted(rt.standbys.tasks) if rt is not None and rt.standbys else [],
            "restore_remaining": rt.restorer.remaining() if rt is not None else 0,
            "consumed": self.consumed,
            "produced": self.metrics.produced_total,  # delivered, as records_produced_total
        }

    @property
    def consumed(self) -> int:
        """How many records the tasks were fed (0 until started)."""
        return self._processing.consumed if self._processing is not None else 0

    @property
    def produced(self) -> int:
        """How many results the tasks handed to the producer (0 until started)."""
        return self._processing.produced if self._processing is not None else 0

    def _started(self, what: str) -> Runtime:
        if self._runtime is None:
            raise AttributeError(f"{what} exists once {self.settings.application_id} started")
        return self._runtime

    @property
    def topology(self) -> Topology:
        """The topology this App runs (once started)."""
        return self._started("the topology").topology

    @property
    def tasks(self) -> TaskManager:
        """This instance's stream tasks (once started)."""
        return self._started("the task manager").tasks

    @property
    def assignor(self) -> PartitionGroupAssignor:
        """The group's assignor, with what this member learnt of the last assignment
        (once started)."""
        return self._started("the assignor").assignor

    def partition_count(self, topic: str) -> int:
        rt = self._runtime
        return rt.counts.get(topic, 1) if rt is not None else 1

    def sources_of(self, subtopology: int) -> tuple[str, ...]:
        """The source topics of ``subtopology`` (known once started)."""
        rt = self._runtime
        return tuple(rt.layout.sources.get(subtopology, ())) if rt is not None else ()

    @property
    def default_key_serde(self) -> Any:
        """The serde of keys no node names one for (``None``: bytes)."""
        return self._serdes[0]

    @property
    def default_value_serde(self) -> Any:
        """The serde of values no node names one for (``None``: bytes)."""
        return self._serdes[1]

    @property
    def global_stores(self) -> GlobalStores | None:
        """The global stores; ``None`` until start-up is done, or without global tables."""
        return self._runtime.globals if self._runtime is not None else None
