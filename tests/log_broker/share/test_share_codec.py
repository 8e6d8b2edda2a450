"""Records of __share_group_state: what is written reads back; damage is refused."""

from __future__ import annotations

import uuid

import pytest

from headrace.log_broker.share._codec import (
    ConfigKey,
    StateKey,
    decode_configs,
    decode_key,
    decode_snapshot,
    encode_config_key,
    encode_configs,
    encode_key,
    encode_snapshot,
)
from headrace.log_broker.share._partition import RecordState, Snapshot, StateRange


def test_keys_snapshots_and_configs_round_trip() -> None:
    key = StateKey("grüppe", uuid.uuid4(), 7)
    assert decode_key(encode_key(key)) == key
    assert decode_key(encode_config_key(ConfigKey("g"))) == ConfigKey("g")
    snapshot = Snapshot(
        5,
        20,
        (StateRange(5, 9, RecordState.AVAILABLE, 2), StateRange(12, 19, RecordState.ARCHIVED, 5)),
    )
    assert decode_snapshot(encode_snapshot(snapshot)) == snapshot
    configs = {"share.auto.offset.reset": "earliest", "share.delivery.count.limit": "3"}
    assert decode_configs(encode_configs(configs)) == configs


@pytest.mark.parametrize(
    "damage",
    [b"", b"\x00", b"\x00\x07\x00\x01g", encode_key(StateKey("g", uuid.UUID(int=7), 0))[:-1]],
    ids=["empty", "one-byte", "cut-name", "cut-partition"],  # the same in every worker
)
def test_a_damaged_key_is_refused(damage: bytes) -> None:
    with pytest.raises(ValueError):
        decode_key(damage)


def test_a_damaged_value_is_refused() -> None:
    good = encode_snapshot(Snapshot(0, 1, (StateRange(0, 0, RecordState.ACKNOWLEDGED, 1),)))
    for damage in (good[:-1], good + b"\x00", b"\x00\x09" + good[2:], good[:-3] + b"\x07\x00\x01"):
        with pytest.raises(ValueError):
            decode_snapshot(damage)
    with pytest.raises(ValueError):
        decode_configs(b"no-equals-sign\n")
