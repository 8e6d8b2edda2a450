"""``share.renew.acknowledge.enable``, the group config of KIP-1222 (on by default in
Kafka 4.4): off, a RENEW acknowledgement is refused and changes nothing."""

from __future__ import annotations

import pytest

from headrace.log_broker.share._config import GROUP_CONFIG_NAMES, PartitionRules, rules_with
from headrace.log_broker.share._errors import InvalidRecordStateError, InvalidShareConfigError
from headrace.log_broker.share._partition import AckType, RecordState, SharePartition

RULES = PartitionRules(lock_duration_ms=1000, delivery_count_limit=3, max_in_flight_records=10)


def test_the_setting_is_a_group_config_read_as_kafka_reads_booleans() -> None:
    assert "share.renew.acknowledge.enable" in GROUP_CONFIG_NAMES
    assert PartitionRules().renew_enabled
    assert not rules_with(RULES, {"share.renew.acknowledge.enable": "FALSE"}).renew_enabled
    assert rules_with(RULES, {"share.renew.acknowledge.enable": "true"}).renew_enabled
    with pytest.raises(InvalidShareConfigError, match="true or false"):
        rules_with(RULES, {"share.renew.acknowledge.enable": "1"})


def test_a_renew_is_refused_when_off_and_the_lock_runs_out_as_taken() -> None:
    p = SharePartition(0, rules_with(RULES, {"share.renew.acknowledge.enable": "false"}))
    p.acquire("a", 0, 10, [(0, 1)])
    with pytest.raises(InvalidRecordStateError, match=r"share\.renew\.acknowledge\.enable"):
        p.acknowledge("a", 0, 1, (AckType.ACCEPT, AckType.RENEW), 900)
    assert p.state_of(0) is RecordState.ACQUIRED  # all or nothing: the ACCEPT was not applied
    assert [a.first_offset for a in p.acquire("b", 1500, 10)] == [0]  # the lock was not extended
