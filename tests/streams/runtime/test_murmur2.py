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
