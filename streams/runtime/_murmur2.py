"""Kafka's default partitioner: murmur2 of the key bytes, made positive, modulo the count.

Byte for byte the function of Java's ``org.apache.kafka.common.utils.Utils.murmur2``
and ``BuiltInPartitioner.partitionForKey``, which librdkafka's ``murmur2_random``
partitioner also follows, so a key lands on the partition every Kafka producer picks.
Java's ``int`` arithmetic wraps at 32 bits; here every product is masked to 32 bits and
the signed value is produced only at the end.

>>> murmur2(b"21")
-973932308
>>> partition_for_key(b"foobar", 12)
6
"""

from __future__ import annotations

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """The signed 32-bit murmur2 hash Kafka computes for ``data``."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    tail = length & ~3
    for i in range(0, tail, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    rest = length & 3
    # Java's switch falls through from 3 to 2 to 1.
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - 0x100000000 if h & 0x80000000 else h


def partition_for_key(key: bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner gives a non-null ``key``."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


class KeyPartitioner:
    """``partition_for_key`` with bounded memos, one per partition count: hot keys are
    hashed once.

    Streams of events usually repeat a modest set of keys (users, sensors), so a dict
    lookup replaces most of the pure-Python hashing. A hot loop takes the memo for its
    count with :meth:`table`, looks keys up in it directly and calls the partitioner
    only on a miss. A memo is dropped whole when it outgrows ``max_entries``, which
    keeps it cheap and bounded.
    """

    __slots__ = ("_max", "_tables")

    def __init__(self, max_entries: int = 100_000) -> None:
        self._tables: dict[int, dict[bytes, int]] = {}
        self._max = max_entries

    def table(self, partitions: int) -> dict[bytes, int]:
        """The memo of keys already placed among ``partitions`` partitions."""
        table = self._tables.get(partitions)
        if table is None:
            table = self._tables[partitions] = {}
        return table

    def __call__(self, key: bytes, partitions: int) -> int:
        table = self.table(partitions)
        found = table.get(key)
        if found is None:
            if len(table) >= self._max:
                table.clear()
            found = table[key] = partition_for_key(key, partitions)
        return found
