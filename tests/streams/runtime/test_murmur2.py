import random

import pytest
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from headrace.streams.runtime import murmur2, partition_for_key
from headrace.streams.runtime._murmur2 import KeyPartitioner

# Values computed by Java's org.apache.kafka.common.utils.Utils.murmur2 (Kafka's UtilsTest).
JAVA = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize(("data", "expected"), JAVA.items())
def test_matches_java_values(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


def test_matches_an_independent_implementation_on_every_tail_length() -> None:
    rng = random.Random(3)
    for length in range(0, 67):
        data = bytes(rng.randrange(256) for _ in range(length))
        assert murmur2(data) & 0xFFFFFFFF == kafka_python_murmur2(data) & 0xFFFFFFFF


def test_partition_is_the_positive_hash_modulo_the_count() -> None:
    assert partition_for_key(b"foobar", 12) == (-790332482 & 0x7FFFFFFF) % 12
    assert {partition_for_key(f"k{i}".encode(), 3) for i in range(100)} == {0, 1, 2}


def test_memoised_partitioner_agrees_and_stays_bounded() -> None:
    part = KeyPartitioner(max_entries=10)
    for i in range(100):
        key = f"user-{i % 37}".encode()
        assert part(key, 7) == partition_for_key(key, 7)
        assert part(key, 3) == partition_for_key(key, 3)
        assert part.table(7)[key] == partition_for_key(key, 7)
    assert len(part.table(7)) <= 10 and len(part.table(3)) <= 10
    assert part.held(7) <= 20 and part.held(3) <= 20


def test_keys_written_for_a_while_leave_the_memo_and_hot_keys_stay() -> None:
    # A windowed count's results are keyed by user and window: an hour of one-minute
    # windows over 1,000 users is 60,000 keys, each written only while its window is
    # open. The memo must not keep them all (it did, up to 100,000: about 10 MiB), and
    # keys written in every window must stay memoised.
    part = KeyPartitioner()
    hot = [f"hot-{i}".encode() for i in range(50)]
    for window in range(60):
        for user in range(1_000):
            key = f"user-{user}@{1_732_500_000_000 + window * 60_000}".encode()
            assert part(key, 4) == partition_for_key(key, 4)
        for key in hot:
            part(key, 4)
    assert part.held(4) <= 2 * 16_384, part.held(4)
    assert all(key in part.table(4) for key in hot)
