"""base's public surface (that it imports nothing of ours: tests/test_layering.py)."""

from __future__ import annotations

from headrace import base


def test_all_is_pinned() -> None:
    assert sorted(base.__all__) == [
        "BrokerError",
        "ClientSecurity",
        "ClientSecurityError",
        "Clock",
        "CoordinatorNotAvailableError",
        "IllegalTransitionError",
        "Lifecycle",
        "ManualClock",
        "PLAINTEXT",
        "PropertiesError",
        "SystemClock",
        "TopicPartition",
        "TransactionError",
        "TransitionTable",
        "check_transition",
        "fsync_dir",
        "parse_properties",
        "read_properties",
        "transition_table",
        "write_atomically",
    ]
    for name in base.__all__:
        assert getattr(base, name) is not None, name
