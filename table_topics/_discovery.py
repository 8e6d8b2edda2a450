"""Which topics want a table, asked of the cluster like any admin client would ask.

Every few seconds the writer lists the topics (Metadata) and reads their configs
(DescribeConfigs, one request for all of them); :class:`Discovery` turns the answers
into :class:`TableSettings` per topic whose ``headrace.table.mode`` is not ``disabled``.
"""

from __future__ import annotations

import logging
from typing import Any

from ._settings import TableSettings

log = logging.getLogger("headrace.table_topics")
REQUEST_TIMEOUT_S = 10.0


class Discovery:
    """Reads the table settings of every topic of the cluster at ``bootstrap``."""

    def __init__(self, bootstrap: str, client_config: dict[str, str] | None = None) -> None:
        from confluent_kafka.admin import AdminClient

        self._admin = AdminClient(
            {"bootstrap.servers": bootstrap, "log_level": 3, **(client_config or {})}
        )

    def tables(self) -> dict[str, TableSettings]:
        """Topic -> settings of each topic that has a table now. Raises ``KafkaException``
        when the cluster does not answer (the caller tries again at its next look)."""
        from confluent_kafka.admin import ConfigResource

        metadata = self._admin.list_topics(timeout=REQUEST_TIMEOUT_S)
        partitions = {
            name: len(topic.partitions)
            for name, topic in metadata.topics.items()
            # internal topics never have tables; a topic being created may have no
            # partitions yet
            if not name.startswith("__") and topic.error is None and topic.partitions
        }
        if not partitions:
            return {}
        resources = [ConfigResource(ConfigResource.Type.TOPIC, name) for name in partitions]
        found: dict[str, TableSettings] = {}
        for resource, future in self._admin.describe_configs(resources).items():
            try:
                entries: dict[str, Any] = future.result(timeout=REQUEST_TIMEOUT_S)
            except Exception as exc:  # deleted between the two requests, say
                log.debug("no configs for topic %s: %s", resource.name, exc)
                continue
            configs = {name: entry.value for name, entry in entries.items()}
            settings = TableSettings.from_configs(resource.name, configs, partitions[resource.name])
            if settings is not None:
                found[resource.name] = settings
        return found
