"""Bytes on disk per partition, read with DescribeLogDirs from every broker of a
cluster (each reports the replicas it holds; the largest copy is the size shown).

Both ``headrace topics describe`` and the console's topic pages use it. A cluster that
does not answer DescribeLogDirs (an older or partial implementation) raises here; the
callers show no sizes rather than fail.
"""

from __future__ import annotations

from kio.schema.describe_log_dirs.v1.request import DescribableLogDirTopic, DescribeLogDirsRequest
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v4.request import MetadataRequest
from kio.schema.types import TopicName
from kio.static.primitive import i32

from .kafka_admin import KioAdmin


class LogDirsReader(KioAdmin):
    async def partition_sizes(
        self, topics: dict[str, list[int]] | None = None
    ) -> dict[tuple[str, int], int]:
        """(topic, partition) -> bytes, for the partitions named (all when None)."""
        metadata = await self._any(MetadataRequest(topics=(), allow_auto_topic_creation=False))
        request = DescribeLogDirsRequest(
            topics=None
            if topics is None
            else tuple(
                DescribableLogDirTopic(
                    topic=TopicName(name), partitions=tuple(i32(p) for p in partitions)
                )
                for name, partitions in topics.items()
            )
        )
        sizes: dict[tuple[str, int], int] = {}
        for broker in metadata.brokers:
            response = await (await self._connect((broker.host, broker.port))).request(request)
            for result in response.results:
                if result.error_code != ErrorCode.none:
                    continue
                for entry in result.topics:
                    for p in entry.partitions:
                        key = (entry.name, p.partition_index)
                        sizes[key] = max(sizes.get(key, 0), p.partition_size)
        return sizes
