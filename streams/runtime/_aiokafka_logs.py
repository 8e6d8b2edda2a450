"""aiokafka's log lines about missing topics, quieted where the runtime says it itself.

Why topics go missing and are not re-created: a Kafka broker with
``auto.create.topics.enable=true`` (Kafka's default, and the built-in broker's)
creates any topic a Metadata request names, unless the request says
``allow_auto_topic_creation=false`` (a field since Metadata v4). aiokafka leaves it
true, so a source topic deleted under a running application came back at the next
metadata refresh, empty and with the broker's default partition count, and the
application read on as if nothing had happened; a misspelt sink was created the same
way. So every client of the runtime forbids it (``forbid_auto_create`` in
``_aiokafka_internals.py``), and the runtime creates the topics it owns (repartition
topics, changelogs) explicitly with CreateTopics. A broker older than Metadata v4 has
no such field and may still create topics; Kafka 0.11 (2017) and every later version
have it.

aiokafka then logs a line per metadata refresh about a topic that does not exist, and
one per partition and commit retry; for the source topics, whose disappearance the
runtime reports in one line as it stops, those lines are dropped here.
"""

from __future__ import annotations

import logging

_NOT_FOUND = "Topic %s not found in cluster metadata"
_COMMIT_FAILED = "OffsetCommit failed for group %s on partition %s with offset %s: %s"


class _ReportedByTheRuntime(logging.Filter):
    """Drops aiokafka's lines about the missing topics the runtime reports itself."""

    def __init__(self) -> None:
        super().__init__()
        self.topics: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        if record.msg == _NOT_FOUND and len(args) == 1:
            return args[0] not in self.topics
        if record.msg == _COMMIT_FAILED and len(args) == 4:
            return not (
                args[3] == "UnknownTopicOrPartitionError"
                and getattr(args[1], "topic", None) in self.topics
            )
        return True


_reported = _ReportedByTheRuntime()
logging.getLogger("aiokafka.cluster").addFilter(_reported)
logging.getLogger("aiokafka.consumer.group_coordinator").addFilter(_reported)


def reported_by_the_runtime(topics: set[str] | frozenset[str]) -> None:
    """Keep aiokafka quiet about ``topics`` going missing: the runtime says it."""
    _reported.topics.update(topics)
