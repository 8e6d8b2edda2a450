"""The small interface the runtime needs from a Kafka client.

Narrow Protocols instead of one wide one, so another client library can replace
the aiokafka implementation (``_aiokafka.py``) piece by piece. Records cross this
boundary as the plain tuples tasks already use (:data:`streams.ConsumedRecord`,
:data:`streams.ProducedRecord`): no client-specific objects reach the tasks.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from .._record import ConsumedRecord, ProducedRecord

if TYPE_CHECKING:
    from ._assignor import PartitionGroupAssignor

TopicPartition = tuple[str, int]

PartitionsListener = Callable[[set[TopicPartition]], Awaitable[None]]


@dataclass(frozen=True)
class TopicSpec:
    """A topic the runtime creates when it is missing."""

    name: str
    partitions: int
    config: Mapping[str, str] = field(default_factory=dict)


@dataclass
class ProduceFailure:
    """Records the broker refused, with the error; the production handler decides."""

    topic: str
    partition: int
    records: list[ProducedRecord]
    error: BaseException


# Per partition, how many records had been queued at a point: what a flush waits for.
FlushMark = Mapping[TopicPartition, int]


@dataclass
class FlushResult:
    """What a producer flush delivered: the next offset per partition written, and failures."""

    next_offsets: dict[TopicPartition, int] = field(default_factory=dict)
    failures: list[ProduceFailure] = field(default_factory=list)


class GroupConsumer(Protocol):
    """A consumer in the application's group: subscribes, polls, pauses, commits."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def subscribe(
        self,
        topics: Collection[str],
        on_revoked: PartitionsListener,
        on_assigned: PartitionsListener,
    ) -> None: ...

    async def poll(
        self, timeout_ms: int, max_records: int
    ) -> dict[TopicPartition, list[ConsumedRecord]]: ...

    def pause(self, partitions: Collection[TopicPartition]) -> None: ...

    def resume(self, partitions: Collection[TopicPartition]) -> None: ...

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None: ...

    def unfetched(self, partition: TopicPartition) -> int | None:
        """Records of ``partition`` on the broker (up to the last stable offset under
        read_committed) that no poll has handed out yet; ``None`` while not known."""

    def highwater(self, partition: TopicPartition) -> int | None:
        """The partition's end offset as last fetched, or ``None`` before any fetch."""

    def assignment(self) -> set[TopicPartition]: ...

    def seek(self, partition: TopicPartition, offset: int) -> None:
        """Fetch ``partition`` from ``offset`` next."""

    async def seek_to_committed(self, partitions: Collection[TopicPartition]) -> None:
        """Rewind ``partitions`` to the group's committed offsets (exactly-once aborts)."""

    def generation_valid(self) -> bool:
        """Whether this member still belongs to the group's current generation."""

    async def while_sources_exist(self, commit: Awaitable[None]) -> None:
        """Await ``commit`` (of offsets, or of a transaction holding them), but give it up
        and raise :class:`SourceTopicDeletedError` naming the topic once a source topic is
        found deleted: a commit for a deleted topic may otherwise be retried without end."""


class _AssignedReader(Protocol):
    """A consumer outside any group, assigned partitions and positioned by hand."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def assign(self, partitions: Collection[TopicPartition]) -> None: ...

    async def seek(self, partition: TopicPartition, offset: int | None) -> None:
        """Position at ``offset``, or at the beginning when it is ``None``."""

    async def end_offsets(
        self, partitions: Collection[TopicPartition]
    ) -> dict[TopicPartition, int]: ...

    async def position(self, partition: TopicPartition) -> int | None:
        """The next offset to fetch, past transaction markers and aborted records."""


class ChangelogReader(_AssignedReader, Protocol):
    """Reads changelogs, for restoring stores and keeping standbys."""

    async def poll(
        self, timeout_ms: int, max_records: int
    ) -> dict[TopicPartition, list[tuple[int, bytes, bytes | None, int]]]:
        """``(offset, key, value, timestamp)`` per partition."""


class GlobalReader(_AssignedReader, Protocol):
    """Reads whole topics for the global stores; records come out as
    :data:`streams.ConsumedRecord` tuples, as tasks take them."""

    async def poll(
        self, timeout_ms: int, max_records: int
    ) -> dict[TopicPartition, list[ConsumedRecord]]: ...


class RecordProducer(Protocol):
    """Sends produced tuples; ``flush`` waits for every one sent before a mark (by
    default, all of them) and says what happened."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def send(self, records: Sequence[ProducedRecord]) -> None: ...

    def mark(self) -> FlushMark: ...

    async def flush(self, upto: FlushMark | None = None) -> FlushResult: ...


class TransactionalProducer(RecordProducer, Protocol):
    """The exactly-once producer: what it sends belongs to an open transaction, begun on
    the first send; the transaction commits together with the consumed offsets."""

    @property
    def in_transaction(self) -> bool: ...

    async def send_offsets(self, offsets: Mapping[TopicPartition, int], group_id: str) -> None:
        """Add ``offsets`` of ``group_id`` to the open transaction (begun if need be);
        they commit with it. May run while its output is still being flushed."""

    async def commit_transaction(
        self, offsets: Mapping[TopicPartition, int], group_id: str
    ) -> None:
        """Add ``offsets`` (if any) as :meth:`send_offsets` does, then commit."""

    async def abort_transaction(self) -> None: ...

    def hold(self) -> None:
        """Keep what is sent from now on out of the open transaction (it commits)."""

    async def release(self) -> None:
        """Begin the next transaction with what was sent while held."""


class TopicAdmin(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def partition_counts(self, topics: Collection[str]) -> dict[str, int]:
        """Partition count of each topic that exists; missing topics are left out."""

    async def create_topics(self, specs: Sequence[TopicSpec]) -> None: ...


class ClientFactory(Protocol):
    """Builds the clients of one application instance."""

    def group_consumer(self, group_id: str, assignor: PartitionGroupAssignor) -> GroupConsumer:
        """The group's consumer; ``assignor`` places whole tasks on the members (the
        group's partition assignment strategy)."""

    def changelog_reader(self) -> ChangelogReader: ...

    def global_reader(self) -> GlobalReader: ...

    def producer(self) -> RecordProducer: ...

    def transactional_producer(self, transactional_id: str) -> TransactionalProducer: ...

    def admin(self) -> TopicAdmin: ...
