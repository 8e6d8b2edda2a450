"""Just enough of a Kafka client for the ``headrace groups`` commands.

Requests are kio entities written over an asyncio stream (``KioConnection``), one at
a time per connection; group requests go to the group's coordinator (FindCoordinator), so the
commands work against any Kafka-protocol broker, not only the built-in one. Only
versions without tagged fields are used (request header v1, response header v0).
"""

from __future__ import annotations

from typing import Any

from kio.schema.consumer_group_describe.v0.request import ConsumerGroupDescribeRequest
from kio.schema.delete_groups.v1.request import DeleteGroupsRequest
from kio.schema.describe_groups.v4.request import DescribeGroupsRequest
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v2.request import FindCoordinatorRequest
from kio.schema.list_groups.v2.request import ListGroupsRequest
from kio.schema.metadata.v4.request import MetadataRequest, MetadataRequestTopic
from kio.schema.offset_commit.v7.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.schema.offset_fetch.v5.request import OffsetFetchRequest, OffsetFetchRequestTopic
from kio.serial.errors import DecodeError

from headrace.base import PLAINTEXT, ClientSecurity, TopicPartition
from headrace.base.kafka_admin import KioAdmin, KioConnection
from headrace.base.kio_entities import make


class AdminRequestError(RuntimeError):
    """A broker refused a request of the ``headrace groups`` client; carries its code."""

    def __init__(self, what: str, error_code: int, error_name: str, retriable: bool) -> None:
        super().__init__(f"{what}: {error_name}")
        self.error_code = error_code
        self.retriable = retriable


class GroupAdminClient(KioAdmin):
    def __init__(
        self, bootstrap_servers: str, *, timeout: float = 15.0, security: ClientSecurity = PLAINTEXT
    ) -> None:
        super().__init__(
            bootstrap_servers, timeout=timeout, security=security, client_id="headrace-groups"
        )

    async def _coordinator(self, group: str) -> KioConnection:
        response = await self._any(make(FindCoordinatorRequest, key=group, key_type=0))
        _check(f"finding the coordinator of {group!r}", response.error_code)
        return await self._connect((response.host, response.port))

    async def _on_coordinator(self, group: str, body: Any) -> Any:
        return await (await self._coordinator(group)).request(body)

    # ------------------------------------------------------------------ requests

    async def list_groups(self) -> list[tuple[str, str]]:
        """(group id, protocol type) from every broker of the cluster."""
        metadata = await self._any(
            make(MetadataRequest, topics=(), allow_auto_topic_creation=False)
        )
        found: dict[str, str] = {}
        for broker in metadata.brokers:
            connection = await self._connect((broker.host, broker.port))
            response = await connection.request(ListGroupsRequest())
            _check("listing groups", response.error_code)
            found.update((g.group_id, g.protocol_type) for g in response.groups)
        return sorted(found.items())

    async def partitions(self, topics: set[str]) -> list[TopicPartition]:
        """Every partition of those of ``topics`` that exist (never creating one: asking
        about a topic with Metadata below v4 would auto-create it)."""
        if not topics:
            return []
        metadata = await self._any(
            make(
                MetadataRequest,
                allow_auto_topic_creation=False,
                topics=tuple(make(MetadataRequestTopic, name=t) for t in sorted(topics)),
            )
        )
        return sorted(
            TopicPartition(t.name, p.partition_index)
            for t in metadata.topics
            if t.error_code == ErrorCode.none
            for p in t.partitions
        )

    async def _every_partition(self) -> tuple[OffsetFetchRequestTopic, ...]:
        metadata = await self._any(
            make(MetadataRequest, topics=None, allow_auto_topic_creation=False)
        )
        return tuple(
            make(
                OffsetFetchRequestTopic,
                name=t.name,
                partition_indexes=tuple(p.partition_index for p in t.partitions),
            )
            for t in metadata.topics
            if t.error_code == ErrorCode.none
        )

    async def describe(self, group: str) -> Any:
        response = await self._on_coordinator(
            group, make(DescribeGroupsRequest, groups=(group,), include_authorized_operations=False)
        )
        [described] = response.groups
        _check(f"describing {group!r}", described.error_code)
        return described

    async def describe_consumer(self, group: str) -> Any | None:
        """The group as ConsumerGroupDescribe (KIP-848) tells it, or None when it is not
        a consumer-protocol group (or the broker predates that API)."""
        request = make(
            ConsumerGroupDescribeRequest, group_ids=(group,), include_authorized_operations=False
        )
        connection = await self._coordinator(group)
        try:
            response = await connection.request(request)
        except (OSError, EOFError, DecodeError):
            # A broker without API 69 hangs up: later requests need a new connection.
            for address, open_ in list(self._connections.items()):
                if open_ is connection:
                    del self._connections[address]
            connection.close()
            return None
        [described] = response.groups
        if described.error_code == ErrorCode.group_id_not_found:
            return None
        _check(f"describing {group!r}", described.error_code)
        return described

    async def committed(self, group: str) -> dict[TopicPartition, int]:
        try:
            response = await self._on_coordinator(
                group, make(OffsetFetchRequest, group_id=group, topics=None)
            )
        except DecodeError:
            # Some brokers (Tansu 0.6) answer the all-topics form with a truncated body;
            # the frame was read whole, so the connection is fine: ask topic by topic.
            response = await self._on_coordinator(
                group,
                make(OffsetFetchRequest, group_id=group, topics=await self._every_partition()),
            )
        _check(f"fetching offsets of {group!r}", response.error_code)
        committed = {}
        for topic in response.topics:
            for p in topic.partitions:
                _check(f"fetching offsets of {group!r}", p.error_code)
                if p.committed_offset >= 0:
                    committed[TopicPartition(topic.name, p.partition_index)] = p.committed_offset
        return committed

    async def commit(self, group: str, offsets: dict[TopicPartition, int]) -> None:
        """Commit as a non-member (generation -1), which the coordinator allows only
        while the group has no members."""
        by_topic: dict[str, list[Any]] = {}
        for tp, offset in sorted(offsets.items()):
            by_topic.setdefault(tp.topic, []).append(
                make(
                    OffsetCommitRequestPartition,
                    partition_index=tp.partition,
                    committed_offset=offset,
                    committed_leader_epoch=-1,
                    committed_metadata="",
                )
            )
        response = await self._on_coordinator(
            group,
            make(
                OffsetCommitRequest,
                group_id=group,
                generation_id_or_member_epoch=-1,
                member_id="",
                group_instance_id=None,
                topics=tuple(
                    make(OffsetCommitRequestTopic, name=t, partitions=tuple(ps))
                    for t, ps in by_topic.items()
                ),
            ),
        )
        for topic in response.topics:
            for p in topic.partitions:
                _check(f"committing {topic.name}-{p.partition_index} for {group!r}", p.error_code)

    async def delete(self, group: str) -> None:
        response = await self._on_coordinator(
            group, make(DeleteGroupsRequest, groups_names=(group,))
        )
        [result] = response.results
        _check(f"deleting {group!r}", result.error_code)


def _check(what: str, code: ErrorCode) -> None:
    if code != ErrorCode.none:
        raise AdminRequestError(what, int(code), code.name.upper(), code.retriable)
