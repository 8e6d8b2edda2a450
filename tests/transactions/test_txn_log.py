"""Records of __transaction_state: Kafka's key v0 / value v0 layout and partitioning."""

from __future__ import annotations

import struct

import pytest

from headrace.transactions import (
    TopicPartition,
    TransactionMetadata,
    TxnLogRecordError,
    TxnState,
    decode_txn_log_key,
    decode_txn_log_value,
    encode_txn_log_key,
    encode_txn_log_value,
    txn_log_partition_for,
)
from headrace.transactions._txn_log import java_string_hash


def test_java_string_hash_matches_java() -> None:
    # Values printed by java.lang.String.hashCode (jshell, Java 17).
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("transactional-id-1") == 1051133891
    assert java_string_hash("\u00e9\U0001f600") == 1996812
    assert txn_log_partition_for("hello", 50) == 99162322 % 50
    assert txn_log_partition_for("transactional-id-1", 50) == (1051133891 & 0x7FFFFFFF) % 50


def test_key_layout() -> None:
    assert encode_txn_log_key("tx") == b"\x00\x00\x00\x02tx"
    assert decode_txn_log_key(encode_txn_log_key("t\u00e9")) == "t\u00e9"


def test_value_layout_and_round_trip() -> None:
    meta = TransactionMetadata(
        "tx",
        12,
        3,
        60000,
        TxnState.PREPARE_COMMIT,
        frozenset({TopicPartition("b", 1), TopicPartition("a", 2), TopicPartition("a", 0)}),
        start_ms=1000,
        last_update_ms=2000,
    )
    data = encode_txn_log_value(meta)
    version, pid, epoch, timeout, status = struct.unpack_from(">hqhib", data)
    assert (version, pid, epoch, timeout, status) == (0, 12, 3, 60000, 2)
    pos = struct.calcsize(">hqhib")
    assert data[pos : pos + 4] == b"\x00\x00\x00\x02"  # two topics
    assert data[pos + 4 : pos + 7] == b"\x00\x01a"
    assert struct.unpack_from(">iii", data, pos + 7) == (2, 0, 2)
    assert struct.unpack_from(">qq", data, len(data) - 16) == (2000, 1000)
    assert decode_txn_log_value("tx", data) == meta


@pytest.mark.parametrize(
    "data",
    [
        b"\x00\x01\x00\x02tx",  # key version 1
        b"\x00\x00\x00\x05tx",  # string runs past the end
        b"\x00\x00\x00\x02txx",  # trailing bytes
        b"\x00\x00\x00\x02\xff\xfe",  # not UTF-8
    ],
)
def test_bad_keys_are_refused(data: bytes) -> None:
    with pytest.raises(TxnLogRecordError):
        decode_txn_log_key(data)


def test_bad_values_are_refused() -> None:
    good = encode_txn_log_value(TransactionMetadata("t", 1, 0, 10, TxnState.EMPTY))
    for bad in (good[:-1], good + b"\x00", b"\x00\x01" + good[2:], good[:16] + b"\x09" + good[17:]):
        with pytest.raises(TxnLogRecordError):
            decode_txn_log_value("t", bad)
