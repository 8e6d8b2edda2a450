"""Which topics want a table, asked of the cluster like any admin client would ask.

Every few seconds the writer lists the topics (Metadata) and reads their configs
(DescribeConfigs, one request for all of them); :class:`Discovery` turns the answers
into :class:`TableSettings` per topic whose ``headrace.table.mode`` is not ``disabled``.
Those topics are then described (Metadata again, through DescribeTopics) for their
topic ids, so a topic deleted and created again under its name is told from the old one.
"""

from __future__ import annotations

import base64
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
        return self._with_topic_ids(found)

    def _with_topic_ids(self, found: dict[str, TableSettings]) -> dict[str, TableSettings]:
        """``found`` with each topic's id and its partitions as described with it (a
        topic deleted since it was listed is left out: its next look will tell)."""
        from dataclasses import replace

        from confluent_kafka import TopicCollection

        if not found:
            return {}
        described: dict[str, TableSettings] = {}
        for name, future in self._admin.describe_topics(TopicCollection(list(found))).items():
            try:
                topic = future.result(timeout=REQUEST_TIMEOUT_S)
            except Exception as exc:
                log.debug("topic %s not described: %s", name, exc)
                continue
            described[name] = replace(
                found[name],
                topic_id=kafka_topic_id(topic.topic_id),
                partitions=len(topic.partitions),
            )
        return described


def kafka_topic_id(uuid: Any) -> str:
    """A topic id as Kafka prints it (URL-safe base64 of its 16 bytes, unpadded); empty
    for none (a cluster whose Metadata has no ids).

    >>> from confluent_kafka import Uuid
    >>> kafka_topic_id(Uuid(123456789, -5)), kafka_topic_id(None)
    ('AAAAAAdbzRX_________-w', '')
    """
    if uuid is None:
        return ""
    high, low = uuid.get_most_significant_bits(), uuid.get_least_significant_bits()
    if high == 0 and low == 0:  # Kafka's ZERO_UUID: no id
        return ""
    raw = high.to_bytes(8, "big", signed=True) + low.to_bytes(8, "big", signed=True)
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
