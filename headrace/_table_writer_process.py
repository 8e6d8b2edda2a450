"""The table writer in a child process of the broker command (``headrace broker
--table-location DIR`` or ``headrace.table.location`` in server.properties; composed in
``_beside_broker``).

In a thread of the broker's process the writer shared the broker's GIL, and producing to
a table topic ran at 0.36-0.56 of a plain topic; in a process of its own it does not.
The child (``table_topics._writer_process``) is a Kafka client of the broker's own
listener, like the registry and the console, and its life is the broker's:

1. It starts once the broker listens, forked from a thread of the broker's process that
   lives as long as the child: Linux sends the child SIGKILL when the thread that forked
   it ends (``PR_SET_PDEATHSIG``), and the thread ends only after its child has. So a
   SIGKILL of the broker takes the writer with it, and a restarted broker never has an
   old writer committing beside its new one.
2. Its settings go down its stdin once the registry beside the broker answers (the
   registry's real port is known only then); the location is read from the running
   broker's settings, so the flag and the properties key are one setting.
3. It reports the tables' freshness up its stdout; ``metrics_text`` serves the latest
   report with the broker's metrics.
4. ``stop`` (before the broker stops) sends ``stop``: the child commits what it holds
   while the broker still answers, and exits. Its stdin closing without ``stop`` (the
   broker gone) also ends it, at once.
5. A child that exits while the broker runs (a crash, a kill, an out-of-memory) is
   started again, after ``RESTART_MIN_S`` doubling up to ``RESTART_MAX_S`` while it keeps
   failing soon after its start; the new one resumes from the offsets its tables record.

The registry of ``value_schema_latest`` tables: the one ``--schema-registry-listen`` runs
beside the broker when given; otherwise ``headrace.table.schema.registry.url``
(``--table-schema-registry-url``); otherwise none, and such tables are not written.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from headrace._registry_thread import RegistryThread
    from headrace.table_topics import Freshness

log = logging.getLogger("headrace.table_topics")
REGISTRY_WAIT_S = 60.0  # the writer waits this long for the registry beside it
STOP_TIMEOUT_S = 60.0  # each topic's writer commits what it holds on stop
CHILD_MODULE = "headrace.table_topics._writer_process"
RESTART_MIN_S, RESTART_MAX_S = 1.0, 30.0  # the wait before starting an exited writer again
STEADY_S = 60.0  # a writer that ran this long failed afresh: the next wait is the shortest


class TableWriterProcess:
    def __init__(self, args: argparse.Namespace, registry: RegistryThread | None) -> None:
        self._args, self._registry = args, registry
        self._stopping = threading.Event()
        self._child: subprocess.Popen[str] | None = None
        self._talk = threading.Thread(target=self._talk_to_child, name="table-writer", daemon=True)
        self._stdin_lock = threading.Lock()  # the settings and ``stop`` never interleave
        # The child's latest report and when it came (replaced whole, read by scrapes).
        self._report: tuple[float, dict[str, Freshness]] = (0.0, {})
        self._settings: dict[str, Any] = {}

    def broker_started(self, broker: Any) -> None:
        """Called on the broker's loop once it listens (``log_broker._commands``)."""
        location = broker.config.table_location
        if not location:
            return
        from headrace._beside_broker import local_bootstrap

        try:
            bootstrap = local_bootstrap(self._args)
        except ValueError as exc:
            log.error("no table writer: %s", exc)
            return
        self._settings = {
            "bootstrap": bootstrap,
            "location": location,
            "registry_url": broker.config.table_schema_registry_url or None,
        }
        self._talk.start()

    def freshness(self) -> dict[str, Freshness]:
        """Topic -> how far its table is behind (empty while no writer runs), as of now:
        the report's age is added to each ``seconds_behind``."""
        from dataclasses import replace

        received, report = self._report
        age = time.monotonic() - received
        return {
            topic: fresh
            if fresh.seconds_behind is None
            else replace(fresh, seconds_behind=fresh.seconds_behind + age)
            for topic, fresh in report.items()
        }

    def metrics_text(self) -> bytes:
        """The tables' freshness as Prometheus text (nothing while no writer runs)."""
        freshness = self.freshness()
        if not freshness:
            return b""
        from headrace.table_topics import prometheus_text

        return prometheus_text(freshness)

    def stop(self) -> None:
        self._stopping.set()
        with self._stdin_lock:  # a child being started is in self._child once this holds
            child = self._child
            if child is None:
                return
            try:
                assert child.stdin is not None
                child.stdin.write("stop\n")
                child.stdin.close()
            except (BrokenPipeError, ValueError, OSError):  # it has gone already
                pass
        try:
            child.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            log.error("the table writer did not stop within %.0f s; killed", STOP_TIMEOUT_S)
            child.kill()
            child.wait()
        if self._talk.is_alive():
            self._talk.join(5)

    def _talk_to_child(self) -> None:
        """Steps 1, 2, 3 and 5: start the child and send its settings, read its reports
        until it ends, and start it again while the broker runs."""
        settings = {**self._settings, "registry_url": self._registry_url_now()}
        delay = RESTART_MIN_S
        while True:
            started = time.monotonic()
            code = self._run_child(settings)
            if code is None or self._stopping.is_set():
                return
            ran = time.monotonic() - started
            delay = RESTART_MIN_S if ran >= STEADY_S else delay
            log.error(
                "the table writer exited (%s) while the broker runs; starting it again in %.0f s",
                code,
                delay,
            )
            if self._stopping.wait(delay):
                return
            delay = min(delay * 2, RESTART_MAX_S)

    def _run_child(self, settings: dict[str, Any]) -> int | None:
        """One child from its start to its end; its exit status, or None when ``stop``
        came before it started."""
        with self._stdin_lock:  # ``stop`` either comes first, or finds this child
            if self._stopping.is_set():
                return None
            child = self._child = subprocess.Popen(
                [sys.executable, "-m", CHILD_MODULE, str(os.getpid())],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                bufsize=1,
            )
            assert child.stdin is not None and child.stdout is not None
            try:
                child.stdin.write(json.dumps(settings) + "\n")
                child.stdin.flush()
            except (BrokenPipeError, OSError):
                return child.wait()
        from headrace.table_topics import Freshness

        for line in child.stdout:
            try:
                report = {topic: Freshness(*values) for topic, values in json.loads(line).items()}
            except (ValueError, TypeError):
                log.warning("table writer: an unreadable report: %r", line[:200])
                continue
            self._report = (time.monotonic(), report)
        return child.wait()

    def _registry_url_now(self) -> str | None:
        configured: str | None = self._settings.get("registry_url")
        if self._registry is None:
            return configured
        from headrace._beside_broker import _reachable

        waited = 0.0
        while not self._registry.ready.wait(0.5):
            waited += 0.5
            if self._stopping.is_set() or waited > REGISTRY_WAIT_S:
                log.error("table writer: the schema registry beside it did not start")
                return configured
        return _reachable(self._registry.url)
