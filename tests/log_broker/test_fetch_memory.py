"""The fetch memory budget's rules, the uncopied response frame, and the setting's names."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

from batch_crafting import good, produce_body
from kio.schema.fetch.v11 import request as fetch
from kio.schema.types import TopicName
from kio.static.primitive import i32, i32Timedelta, i64
from rawkafka import RawClient

from headrace.log_broker import Broker
from headrace.log_broker._config import BrokerConfig
from headrace.log_broker._entities import NO_THROTTLE, make
from headrace.log_broker._fetch_frame import fetch_frame_pieces
from headrace.log_broker._fetch_memory import FetchMemory
from headrace.log_broker._hot_codecs import encode_fetch_response
from headrace.log_broker._server_properties import broker_settings
from headrace.log_broker._wire import response_module


def _response(version: int, records: list[bytes]) -> object:
    m = response_module(1, version)
    partitions = tuple(
        make(
            m.PartitionData,
            partition_index=i,
            error_code=0,
            high_watermark=10,
            last_stable_offset=10,
            log_start_offset=0,
            aborted_transactions=None,
            preferred_read_replica=-1,
            records=data,
        )
        for i, data in enumerate(records)
    )
    topic = make(m.FetchableTopicResponse, topic="t", partitions=partitions)
    return make(
        m.FetchResponse, throttle_time=NO_THROTTLE, error_code=0, session_id=0, responses=(topic,)
    )


def test_the_frame_pieces_are_the_hand_codec_bytes_with_big_records_uncopied() -> None:
    big = bytes(range(256)) * 1024  # 256 KiB
    for version in (4, 7, 11):
        body = _response(version, [b"small", big, b"", big])
        pieces = fetch_frame_pieces(version, 42, body)
        assert b"".join(pieces) == encode_fetch_response(version, 42, body)
        assert sum(piece is big for piece in pieces) == 2  # the very objects, not copies
        assert len(pieces) == 4  # the small runs before and between them joined


async def test_reservations_wait_first_come_first_served() -> None:
    budget = FetchMemory(100)
    first = budget.try_reserve(60)
    assert first is not None
    assert budget.try_reserve(50) is None
    big = asyncio.create_task(budget.reserve(80, 5))
    await asyncio.sleep(0)
    # A small request that would fit does not pass the waiting big one.
    assert budget.try_reserve(10) is None
    small = asyncio.create_task(budget.reserve(10, 5))
    await asyncio.sleep(0)
    first.release()
    first.release()  # a second release gives nothing back twice
    assert (await big) is not None
    assert (await small) is not None and budget.in_use == 90


async def test_an_answer_larger_than_the_budget_is_served_alone() -> None:
    budget = FetchMemory(100)
    alone = budget.try_reserve(500)
    assert alone is not None and budget.in_use == 500
    waiting = asyncio.create_task(budget.reserve(1, 5))
    await asyncio.sleep(0.01)
    assert not waiting.done()
    alone.release()
    assert (await waiting) is not None


async def test_a_wait_that_runs_out_leaves_the_queue_and_takes_what_is_free() -> None:
    budget = FetchMemory(100)
    held = budget.try_reserve(70)
    assert held is not None
    assert await budget.reserve(50, 0.05) is None
    assert not budget._waiting
    part = budget.reserve_free(50)
    assert part is not None and part.size == 30 and budget.in_use == 100
    part.release()
    held.shrink(20)
    assert budget.in_use == 20


async def test_a_cancelled_wait_gives_back_what_it_was_granted() -> None:
    budget = FetchMemory(100)
    held = budget.try_reserve(100)
    assert held is not None
    waiting = asyncio.create_task(budget.reserve(50, 5))
    await asyncio.sleep(0)
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)
    held.release()
    assert budget.in_use == 0 and not budget._waiting


def test_the_setting_has_kafka_style_names() -> None:
    settings = broker_settings({"fetch.response.max.memory.bytes": "1048576"})
    assert settings["fetch_response_max_memory_bytes"] == 1 << 20
    config = BrokerConfig(Path("/nonexistent"), fetch_response_max_memory_bytes=1 << 20)
    assert config.broker_configs()["fetch.response.max.memory.bytes"] == str(1 << 20)
    assert BrokerConfig(Path("/x")).fetch_response_max_memory_bytes == 256 << 20


async def test_a_batch_larger_than_the_budget_is_still_fetched(tmp_path: Path) -> None:
    async with Broker(tmp_path, fetch_response_max_memory_bytes=100_000) as broker:

        def scenario() -> int:
            with RawClient(broker.bootstrap_servers) as client:
                answer = client.request(0, 8, produce_body("big", good([b"x" * 400_000])))
                assert answer.responses[0].partition_responses[0].error_code == 0
                body = fetch.FetchRequest(
                    max_wait=i32Timedelta.parse(timedelta(milliseconds=100)),
                    min_bytes=i32(1),
                    max_bytes=i32(1 << 20),
                    forgotten_topics_data=(),
                    topics=(
                        fetch.FetchTopic(
                            topic=TopicName("big"),
                            partitions=(
                                fetch.FetchPartition(
                                    partition=i32(0),
                                    fetch_offset=i64(0),
                                    partition_max_bytes=i32(1 << 20),
                                ),
                            ),
                        ),
                    ),
                )
                return len(client.request(1, 11, body).responses[0].partitions[0].records)

        assert await asyncio.to_thread(scenario) > 400_000
