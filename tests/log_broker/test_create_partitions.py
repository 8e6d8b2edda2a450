"""CreatePartitions (key 37) on the built-in broker, driven by aiokafka's admin client."""

from __future__ import annotations

from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic
from aiokafka.errors import (
    InvalidPartitionsError,
    InvalidTopicError,
    UnknownTopicOrPartitionError,
)


async def _partitions(admin: AIOKafkaAdminClient, topic: str) -> list[int]:
    [described] = await admin.describe_topics([topic])
    return sorted(p["partition"] for p in described["partitions"])


async def test_grows_a_topic_and_refuses_what_kafka_refuses(broker: Any) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    await admin.start()
    try:
        await admin.create_topics([NewTopic("grow", 2, 1)])
        # aiokafka sends only APIs that ApiVersions advertised: this proves it is.
        await admin.create_partitions({"grow": NewPartitions(3)}, validate_only=True)
        assert await _partitions(admin, "grow") == [0, 1]
        await admin.create_partitions({"grow": NewPartitions(4)})
        assert await _partitions(admin, "grow") == [0, 1, 2, 3]
        assert [log.partition for log in broker.state.logs.topics()["grow"].partitions] == [
            0,
            1,
            2,
            3,
        ]

        with pytest.raises(InvalidPartitionsError, match="would not add any"):
            await admin.create_partitions({"grow": NewPartitions(4)})
        with pytest.raises(InvalidPartitionsError):
            await admin.create_partitions({"grow": NewPartitions(1)})
        with pytest.raises(UnknownTopicOrPartitionError):
            await admin.create_partitions({"missing": NewPartitions(2)})
        with pytest.raises(InvalidTopicError):
            await admin.create_partitions({"__consumer_offsets": NewPartitions(60)})
        assert await _partitions(admin, "grow") == [0, 1, 2, 3]
    finally:
        await admin.close()
