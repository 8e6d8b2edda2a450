"""What ``headrace broker`` can run beside the built-in broker: the web console
(``--console-listen HOST:PORT``), the schema registry (``--schema-registry-listen
HOST:PORT``) and the table writer of topics that are tables (``--table-location`` or
``headrace.table.location``; ``_table_writer_process``).

The broker (log_broker) and these services (application-side clients of any cluster)
never import each other; this module composes them at the top. The broker runs as it
always does; the console and the registry each run in a thread of its own with its own
event loop, the table writer in a child process (so its work does not hold the broker's
interpreter), each a Kafka client of the broker's listener, started once the broker
listens (so its first connection is not refused) and stopped before the broker stops
(so its client says goodbye to a broker that still answers). Three things pass between them, all composed
here:

- the registry's URL, so the console decodes registry-framed values with it;
- the broker's table location, so the console shows how far each table topic's table
  is behind;
- the broker's Prometheus text, which the console also serves at ``/metrics``: the
  broker hands itself to ``broker_started`` once it listens, and each scrape reads its
  metrics on the broker's own event loop, where its state changes; the table writer's
  freshness (``headrace_table_*``) follows them.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from headrace._registry_thread import RegistryThread
    from headrace._table_writer_process import TableWriterProcess

log = logging.getLogger("headrace.broker")
METRICS_TIMEOUT_S = 10.0  # a scrape waits this long for the broker's loop
REGISTRY_WAIT_S = 60.0  # the console waits this long for the registry beside it


def register(subparsers: Any, broker_options: argparse.ArgumentParser) -> None:
    broker = subparsers.choices.get("broker")
    if broker is None:
        return
    broker.add_argument(
        "--console-listen",
        metavar="HOST:PORT",
        help="also serve the web console here (read-only), for this broker,"
        " with the broker's metrics at /metrics",
    )
    broker.add_argument(
        "--schema-registry-listen",
        metavar="HOST:PORT",
        help="also run the schema registry here, stored in this broker",
    )
    from headrace.schema_registry._commands import add_registry_options

    add_registry_options(broker)
    run_broker: Callable[[argparse.Namespace], int] = broker.get_default("handler")
    broker.set_defaults(handler=lambda args: _beside(run_broker, args))


def _beside(run_broker: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    services: list[RegistryThread | _ConsoleThread | TableWriterProcess] = []
    registry: RegistryThread | None = None
    if args.schema_registry_listen:
        from headrace._registry_thread import RegistryThread

        registry = RegistryThread(args, local_bootstrap(args))
        services.append(registry)
    # The table location is one of the broker's settings (a flag or server.properties):
    # the writer reads it from the running broker, and starts only when it is set.
    from headrace._table_writer_process import TableWriterProcess

    tables = TableWriterProcess(args, registry)
    if args.console_listen:
        from headrace.console._commands import parse_listen

        services.append(
            _ConsoleThread(
                local_bootstrap(args), parse_listen(args.console_listen), registry, tables
            )
        )
    services.append(tables)  # last, so it stops first

    def started(broker: Any) -> None:
        for service in services:
            service.broker_started(broker)

    async def stopping() -> None:
        # the console and the table writer read the registry
        for service in reversed(services):
            await asyncio.to_thread(service.stop)

    args.broker_started = [*getattr(args, "broker_started", ()), started]
    args.broker_stopping = [*getattr(args, "broker_stopping", ()), stopping]
    try:
        return run_broker(args)
    finally:  # a broker that failed to start never called the hooks
        for service in reversed(services):
            service.stop()


def local_bootstrap(args: argparse.Namespace) -> str:
    """Where the services beside the broker reach it: ``--listen``, else the first
    PLAINTEXT listener of the ``--config`` file, else the broker's default. They connect
    as plain clients, so a broker with only TLS or SASL listeners is refused here with
    the reason rather than left to time out."""
    if args.listen:
        return str(args.listen)
    if not args.config:
        return "127.0.0.1:9092"
    from headrace.base import read_properties
    from headrace.log_broker.security import parse_listeners

    props = read_properties(args.config)
    if "listeners" not in props:
        return "127.0.0.1:9092"
    listeners = parse_listeners(
        props["listeners"], None, props.get("listener.security.protocol.map")
    )
    for listener in listeners:
        if listener.protocol == "PLAINTEXT":
            host = listener.host if listener.host not in ("", "0.0.0.0", "::") else "127.0.0.1"
            return f"{host}:{listener.port}"
    raise ValueError(
        "--console-listen and --schema-registry-listen connect as plain clients: "
        f"the listeners in {args.config} need a PLAINTEXT one"
    )


class _ConsoleThread(threading.Thread):
    def __init__(
        self,
        bootstrap: str,
        listen: tuple[str, int],
        registry: RegistryThread | None,
        tables: TableWriterProcess,
    ) -> None:
        super().__init__(name="headrace-console", daemon=True)
        self._servers, self._listen, self._registry = bootstrap, listen, registry
        self._tables = tables
        self._stopping = threading.Event()
        # The running broker's event loop and metrics, once it has started.
        self._broker: tuple[asyncio.AbstractEventLoop, Callable[[], bytes]] | None = None
        self._table_location: str | None = None

    def broker_started(self, broker: Any) -> None:
        """Called on the broker's loop once it listens (``log_broker._commands``)."""
        self._broker = (asyncio.get_running_loop(), broker.metrics.exposition)
        # the console reads the tables' lag from their Delta logs, wherever the writer runs
        self._table_location = broker.config.table_location or None
        self.start()

    async def broker_metrics(self) -> bytes | None:
        """The broker's Prometheus text, read on its own loop, and the table writer's
        freshness after it; None while there is none."""
        if self._broker is None:
            return None
        loop, exposition = self._broker

        async def read() -> bytes:
            return exposition()

        try:
            future = asyncio.run_coroutine_threadsafe(read(), loop)
            text = await asyncio.wait_for(asyncio.wrap_future(future), METRICS_TIMEOUT_S)
        except (RuntimeError, TimeoutError):  # the broker's loop has stopped, or stalls
            return None
        return text + self._tables.metrics_text()

    def run(self) -> None:
        asyncio.run(self._serve())

    async def _registry_url(self) -> str | None:
        if self._registry is None:
            return None
        deadline = time.monotonic() + REGISTRY_WAIT_S
        while not await asyncio.to_thread(self._registry.ready.wait, 0.5):
            if self._stopping.is_set():
                return None
            if time.monotonic() > deadline:
                break
        if not self._registry.ready.is_set():
            log.error("web console: the schema registry beside it did not start; not decoding")
            return None
        return _reachable(self._registry.url)

    async def _serve(self) -> None:
        from headrace.console import Console

        console = Console(
            self._servers,
            schema_registry=await self._registry_url(),
            metrics=self.broker_metrics,
            table_location=self._table_location,
        )
        deadline = time.monotonic() + 60
        try:
            while not self._stopping.is_set():  # the broker starts in the main thread meanwhile
                try:
                    await console.start(*self._listen)
                    break
                except OSError as error:  # the console's own port
                    log.error("web console cannot listen on %s:%d: %s", *self._listen, error)
                    return
                except Exception:  # the broker does not answer yet
                    await console.stop()
                    if time.monotonic() > deadline:
                        log.error("web console gave up: no broker answered at %s", self._servers)
                        return
                    await asyncio.sleep(0.3)
            else:
                return
            print(f"headrace console on http://{console.address}", file=sys.stderr, flush=True)
            await asyncio.to_thread(self._stopping.wait)
        finally:
            await console.stop()

    def stop(self) -> None:
        self._stopping.set()
        if self.is_alive():
            self.join(10)


def _reachable(url: str) -> str:
    """``url`` with a wildcard host (a registry listening on every interface) replaced by
    loopback: the console beside it connects to an address, and the registry's host guard
    admits 127.0.0.1, never 0.0.0.0.

    >>> _reachable("http://0.0.0.0:8081"), _reachable("http://[::]:8081")
    ('http://127.0.0.1:8081', 'http://127.0.0.1:8081')
    >>> _reachable("http://10.0.0.5:8081")
    'http://10.0.0.5:8081'
    """
    for wildcard in ("//0.0.0.0:", "//[::]:"):
        if wildcard in url:
            return url.replace(wildcard, "//127.0.0.1:", 1)
    return url
