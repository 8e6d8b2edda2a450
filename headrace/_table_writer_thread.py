"""The table writer in a thread of the broker's process (``headrace broker
--table-location DIR`` or ``headrace.table.location`` in server.properties; composed in
``_beside_broker``).

Like the registry and the console, the writer is a Kafka client of the broker's own
listener on a thread of its own, started once the broker listens and stopped before it
stops (it commits what it holds while the broker still answers). It reads the location
from the running broker's settings, so the flag and the properties key are one setting.

The registry of ``value_schema_latest`` tables: the one ``--schema-registry-listen`` runs
beside the broker when given; otherwise ``headrace.table.schema.registry.url``
(``--table-schema-registry-url``); otherwise none, and such tables are not written.
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from headrace._registry_thread import RegistryThread
    from headrace.table_topics import Freshness, TableWriter

log = logging.getLogger("headrace.table_topics")
REGISTRY_WAIT_S = 60.0  # the writer waits this long for the registry beside it
STOP_TIMEOUT_S = 60.0  # each topic's writer commits what it holds on stop


class TableWriterThread:
    def __init__(self, args: argparse.Namespace, registry: RegistryThread | None) -> None:
        self._args, self._registry = args, registry
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="table-writer", daemon=True)
        self._writer: TableWriter | None = None
        self._location, self._registry_url, self._bootstrap = "", "", ""

    def broker_started(self, broker: Any) -> None:
        """Called on the broker's loop once it listens (``log_broker._commands``)."""
        self._location = broker.config.table_location
        if not self._location:
            return
        from headrace._beside_broker import local_bootstrap

        try:
            self._bootstrap = local_bootstrap(self._args)
        except ValueError as exc:
            log.error("no table writer: %s", exc)
            return
        self._registry_url = broker.config.table_schema_registry_url
        self._thread.start()

    def freshness(self) -> dict[str, Freshness]:
        """Topic -> how far its table is behind (empty while no writer runs)."""
        writer = self._writer
        return {} if writer is None else writer.freshness()

    def metrics_text(self) -> bytes:
        """The tables' freshness as Prometheus text (nothing while no writer runs)."""
        writer = self._writer
        if writer is None:
            return b""
        from headrace.table_topics import prometheus_text

        return prometheus_text(writer.freshness())

    def stop(self) -> None:
        self._stopping.set()
        writer = self._writer
        if writer is not None:
            writer.stop()
        if self._thread.is_alive():
            self._thread.join(STOP_TIMEOUT_S)

    def _run(self) -> None:
        try:
            from headrace.table_topics import TableWriter

            writer = TableWriter(
                self._bootstrap, self._location, registry_url=self._registry_url_now()
            )
            self._writer = writer
            if self._stopping.is_set():  # stop() ran before there was a writer to stop
                return
            print(
                f"headrace table writer: tables of table topics under {self._location}",
                file=sys.stderr,
                flush=True,
            )
            writer.run()
        except Exception:
            log.exception("the table writer stopped")

    def _registry_url_now(self) -> str | None:
        if self._registry is None:
            return self._registry_url or None
        from headrace._beside_broker import _reachable

        waited = 0.0
        while not self._registry.ready.wait(0.5):
            waited += 0.5
            if self._stopping.is_set() or waited > REGISTRY_WAIT_S:
                log.error("table writer: the schema registry beside it did not start")
                return self._registry_url or None
        return _reachable(self._registry.url)
