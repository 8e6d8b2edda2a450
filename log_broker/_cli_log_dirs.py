"""Bytes on disk per partition, for ``topics describe``: DescribeLogDirs, asked of every
broker of the cluster (each reports the replicas it holds; the largest is shown). A
cluster that does not answer it (an older or partial implementation) gives no sizes,
and the command shows none rather than failing."""

from __future__ import annotations

import argparse
import logging

from kio.schema.describe_log_dirs.v1.request import DescribableLogDirTopic, DescribeLogDirsRequest
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v4.request import MetadataRequest
from kio.serial.errors import DecodeError

from headrace.base.kafka_admin import KioAdmin

from ._cli_common import client_security
from ._entities import make

log = logging.getLogger("headrace.cli")


class LogDirsClient(KioAdmin):
    async def partition_sizes(self, topic: str, partitions: list[int]) -> dict[int, int]:
        metadata = await self._any(
            make(MetadataRequest, topics=(), allow_auto_topic_creation=False)
        )
        request = make(
            DescribeLogDirsRequest,
            topics=(make(DescribableLogDirTopic, topic=topic, partitions=tuple(partitions)),),
        )
        sizes: dict[int, int] = {}
        for broker in metadata.brokers:
            response = await (await self._connect((broker.host, broker.port))).request(request)
            for result in response.results:
                if result.error_code != ErrorCode.none:
                    continue
                for entry in result.topics:
                    for p in entry.partitions:
                        sizes[p.partition_index] = max(
                            sizes.get(p.partition_index, 0), p.partition_size
                        )
        return sizes


async def partition_sizes(
    args: argparse.Namespace, topic: str, partitions: list[int]
) -> dict[int, int] | None:
    """Bytes per partition of ``topic``, or None when the cluster does not say."""
    try:
        async with LogDirsClient(
            args.bootstrap_servers, security=client_security(args), client_id="headrace-topics"
        ) as client:
            return await client.partition_sizes(topic, partitions)
    except (OSError, ValueError, EOFError, TimeoutError, DecodeError) as error:  # not offered
        log.debug("no log directory sizes: %s", error)
        return None
