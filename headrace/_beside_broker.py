"""What ``headrace broker`` can run beside the built-in broker: the web console
(``--console-listen HOST:PORT``) and the schema registry (``--schema-registry-listen
HOST:PORT``).

The broker (log_broker) and these services (application-side clients of any cluster)
never import each other; this module composes them at the top. The broker runs as it
always does; each service runs in a thread of its own with its own event loop, as a
Kafka client of the broker's listener, started once the broker answers and stopped
after the broker has stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger("headrace.broker")


def register(subparsers: Any, broker_options: argparse.ArgumentParser) -> None:
    broker = subparsers.choices.get("broker")
    if broker is None:
        return
    broker.add_argument(
        "--console-listen",
        metavar="HOST:PORT",
        help="also serve the web console here (read-only), for this broker",
    )
    broker.add_argument(
        "--schema-registry-listen",
        metavar="HOST:PORT",
        help="also run the schema registry here, stored in this broker",
    )
    from headrace.schema_registry._commands import add_registry_options

    add_registry_options(broker)
    run_broker: Callable[[argparse.Namespace], int] = broker.get_default("handler")
    broker.set_defaults(
        handler=lambda args: _with_registry(lambda a: _with_console(run_broker, a), args)
    )


def _with_registry(
    run_broker: Callable[[argparse.Namespace], int], args: argparse.Namespace
) -> int:
    if not args.schema_registry_listen:
        return run_broker(args)
    from headrace._registry_thread import RegistryThread

    registry = RegistryThread(args)
    registry.start()
    try:
        return run_broker(args)
    finally:
        registry.stop()


def _with_console(run_broker: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    if not args.console_listen:
        return run_broker(args)
    from headrace.console._commands import parse_listen

    where = parse_listen(args.console_listen)
    # The console's client logs every refused connection while the broker starts and
    # stops; the console's own state is what matters here, and it says so itself.
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    # --listen's default moved to the broker command (a --config file may name listeners);
    # the console reads the broker through the PLAINTEXT shorthand or its default.
    service = _ConsoleThread(args.listen or "127.0.0.1:9092", where)
    service.start()
    try:
        return run_broker(args)
    finally:
        service.stop()


class _ConsoleThread(threading.Thread):
    def __init__(self, bootstrap: str, listen: tuple[str, int]) -> None:
        super().__init__(name="headrace-console", daemon=True)
        self._servers, self._listen = bootstrap, listen
        self._stopping = threading.Event()

    def run(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        from headrace.console import Console

        console = Console(self._servers)
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
        self.join(10)
