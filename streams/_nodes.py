"""The node types of a physical topology and the sub-topology record.

Nodes are frozen descriptions; the task executor turns them into closures per task.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ._processor import ProcessorSupplier
from ._protocols import (
    Deserializer,
    Serializer,
    StreamPartitioner,
    TimestampExtractor,
    TopicNameExtractor,
)


@dataclass(frozen=True)
class SourceNode:
    name: str
    topics: tuple[str, ...]
    pattern: re.Pattern[str] | None
    key_deserializer: Deserializer | None
    value_deserializer: Deserializer | None
    timestamp_extractor: TimestampExtractor | None
    deserialization_handler: Any  # a DeserializationHandler; Any keeps this module leaf-level


@dataclass(frozen=True)
class ProcessorNode:
    name: str
    supplier: ProcessorSupplier
    parents: tuple[str, ...]


@dataclass(frozen=True)
class SinkNode:
    name: str
    topic: str | None
    topic_extractor: TopicNameExtractor | None
    key_serializer: Serializer | None
    value_serializer: Serializer | None
    partitioner: StreamPartitioner | None
    parents: tuple[str, ...]


Node = SourceNode | ProcessorNode | SinkNode


@dataclass(frozen=True)
class Subtopology:
    """One independently runnable part of a topology; a task runs one per partition."""

    id: int
    nodes: tuple[str, ...]
    source_topics: tuple[str, ...]
    source_patterns: tuple[re.Pattern[str], ...]
    stores: tuple[str, ...]
