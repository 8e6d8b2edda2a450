"""The table writer of a cluster: one ``TopicWriter`` per topic whose table is enabled.

``run()`` looks at the topics' settings every ``discovery_interval_s`` (``Discovery``)
and, in order: stops the writers of topics that no longer have a table (mode set back to
``disabled``, or deleted) or whose settings changed, then starts a writer for each topic
that has a table and none. A writer that is replaced resumes from what its table
recorded, so a change of settings loses and doubles nothing.

A table lives at ``<location>/<topic>``: a directory, or an ``s3://`` URL. For S3,
delta-rs reads the usual ``AWS_*`` variables of the environment (endpoint, keys, region,
``AWS_ALLOW_HTTP``); they are also passed on as its
storage options, so the writer says what it uses.
"""

from __future__ import annotations

import logging
import os
import threading

from ._discovery import Discovery
from ._settings import TableSettings
from ._topic_writer import Freshness, TopicWriter

log = logging.getLogger("headrace.table_topics")
DISCOVERY_INTERVAL_S = 2.0


def storage_options(location: str) -> dict[str, str] | None:
    """delta-rs storage options for ``location``: the ``AWS_*`` environment for S3."""
    if not location.startswith(("s3://", "s3a://")):
        return None
    return {name: value for name, value in os.environ.items() if name.startswith("AWS_")}


class TableWriter:
    """Keeps the table of every table topic of the cluster at ``bootstrap`` up to date."""

    def __init__(
        self,
        bootstrap: str,
        location: str,
        *,
        registry_url: str | None = None,
        discovery_interval_s: float = DISCOVERY_INTERVAL_S,
        client_config: dict[str, str] | None = None,
    ) -> None:
        self.location = location
        self._bootstrap, self._registry_url = bootstrap, registry_url
        self._interval = discovery_interval_s
        self._client_config = client_config
        self._writers: dict[str, TopicWriter] = {}
        self._stopping = threading.Event()

    def freshness(self) -> dict[str, Freshness]:
        """Topic -> how far its table is behind, for every table being written."""
        return {topic: writer.freshness() for topic, writer in dict(self._writers).items()}

    def run(self) -> None:
        """Follow the cluster's table topics until ``stop``; then stop every writer (each
        commits what it holds)."""
        discovery = Discovery(self._bootstrap, self._client_config)
        try:
            while not self._stopping.is_set():
                try:
                    self._apply(discovery.tables())
                except Exception as exc:  # the broker not answering yet, or gone a while
                    log.debug("table topics not read this time: %s", exc)
                self._stopping.wait(self._interval)
        finally:
            for writer in self._writers.values():
                writer.stop()
            self._writers.clear()

    def stop(self) -> None:
        self._stopping.set()

    def _apply(self, wanted: dict[str, TableSettings]) -> None:
        for topic, writer in list(self._writers.items()):
            if wanted.get(topic) != writer.settings:
                log.info("table of topic %s: stopping its writer", topic)
                writer.stop()
                del self._writers[topic]
        for topic, settings in wanted.items():
            if topic not in self._writers and not self._stopping.is_set():
                writer = TopicWriter(
                    settings,
                    self.location,
                    self._bootstrap,
                    registry_url=self._registry_url,
                    storage_options=storage_options(self.location),
                    client_config=self._client_config,
                )
                log.info("table of topic %s (%s) at %s", topic, settings.mode, writer.path)
                self._writers[topic] = writer.start()
