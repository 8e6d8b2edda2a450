"""DescribeLogDirs (key 35): how many bytes each partition takes on disk, as
``kafka-log-dirs.sh``, admin clients, ``headrace topics describe`` and the console show
them. The broker has one log directory (its data directory); v4 adds the disk's total
and usable bytes. Partitions the request names that do not exist are left out, as
Kafka leaves them out. Needs DESCRIBE on the cluster."""

from __future__ import annotations

import shutil
from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..security import Operation, ResourceType

API_KEY = 35


def _wanted(state: BrokerState, topics: Any) -> dict[str, list[int]]:
    """topic -> partitions: every partition when ``topics`` is null, else those named."""
    existing = state.logs.topics()
    if topics is None:
        return {
            name: sorted(log.partition for log in topic.partitions)
            for name, topic in existing.items()
        }
    wanted: dict[str, list[int]] = {}
    for entry in topics:
        topic = existing.get(entry.topic)
        if topic is not None:
            count = len(topic.partitions)
            wanted.setdefault(entry.topic, []).extend(p for p in entry.partitions if 0 <= p < count)
    return wanted


async def handle(state: BrokerState, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    if not request.session.allows(Operation.DESCRIBE, ResourceType.CLUSTER):
        return make(
            m.DescribeLogDirsResponse,
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.cluster_authorization_failed,
            results=(),
        )
    topics = []
    for name, partitions in sorted(_wanted(state, request.body.topics).items()):
        entries = []
        for index in sorted(set(partitions)):
            log = state.logs.get_log(name, index)
            if log is not None:
                entries.append(
                    make(
                        m.DescribeLogDirsPartition,
                        partition_index=index,
                        partition_size=log.size_bytes,
                        offset_lag=0,
                        is_future_key=False,
                    )
                )
        topics.append(make(m.DescribeLogDirsTopic, name=name, partitions=tuple(entries)))
    data_dir = state.config.data_dir.resolve()
    disk = shutil.disk_usage(data_dir)
    result = make(
        m.DescribeLogDirsResult,
        error_code=ErrorCode.none,
        log_dir=str(data_dir),
        topics=tuple(topics),
        total_bytes=disk.total,
        usable_bytes=disk.free,
    )
    return make(
        m.DescribeLogDirsResponse,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        results=(result,),
    )


ROUTE = Route(API_KEY, 1, 4, handle)
