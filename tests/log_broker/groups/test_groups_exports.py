from __future__ import annotations

import headrace.log_broker.groups as groups


def test_public_surface_is_pinned() -> None:
    assert sorted(groups.__all__) == sorted(
        [
            "GROUP_TRANSITIONS",
            "MEMBER_TRANSITIONS",
            "OFFSETS_TOPIC",
            "Clock",
            "ConsumerGroup",
            "ConsumerGroupState",
            "ConsumerMember",
            "Heartbeat",
            "HeartbeatResult",
            "Partition",
            "TopicInfo",
            "CoordinatorNotAvailableError",
            "FencedInstanceIdError",
            "GroupCoordinatorNotAvailableError",
            "GroupConfig",
            "GroupCoordinator",
            "GroupDescription",
            "GroupError",
            "GroupIdNotFoundError",
            "GroupKey",
            "GroupListing",
            "GroupService",
            "GroupState",
            "GroupValue",
            "IllegalGenerationError",
            "IllegalGroupTransitionError",
            "IllegalTransitionError",
            "InconsistentGroupProtocolError",
            "InvalidGroupIdError",
            "InvalidSessionTimeoutError",
            "JoinRequest",
            "JoinResult",
            "JoinedMember",
            "ManualClock",
            "MemberDescription",
            "MemberError",
            "MemberIdRequiredError",
            "MemberState",
            "MemberValue",
            "NewOffset",
            "NonEmptyGroupError",
            "OffsetCommitSizeError",
            "OffsetKey",
            "OffsetValue",
            "OffsetsRecordError",
            "OffsetsReplay",
            "RebalanceInProgressError",
            "Reply",
            "SystemClock",
            "TopicPartition",
            "UnknownMemberIdError",
            "Write",
            "decode_group_value",
            "decode_key",
            "decode_offset_value",
            "encode_group_key",
            "encode_group_value",
            "encode_offset_key",
            "encode_offset_value",
            "partition_for",
            "replay_log",
            "wait_reply",
        ]
    )
    for name in groups.__all__:
        assert getattr(groups, name) is not None


def test_every_error_has_a_kafka_code_and_one_root() -> None:
    # Two names are shared with the transaction coordinator (headrace.base's classes);
    # what this package raises for them is a GroupError too.
    shared = {"CoordinatorNotAvailableError", "IllegalTransitionError"}
    errors = [getattr(groups, n) for n in groups.__all__ if n.endswith("Error")]
    errors = [e for e in errors if e.__name__ not in shared]
    assert issubclass(groups.GroupCoordinatorNotAvailableError, groups.CoordinatorNotAvailableError)
    assert issubclass(groups.IllegalGroupTransitionError, groups.IllegalTransitionError)
    for error in errors:
        assert issubclass(error, groups.GroupError)
        assert isinstance(error.retriable, bool)
        assert isinstance(error.error_code, int)
    assert groups.GroupCoordinatorNotAvailableError.retriable
    assert not groups.UnknownMemberIdError.retriable
    codes = {e.error_code for e in errors if e.error_code != -1}
    assert {15, 22, 23, 24, 25, 26, 27, 28, 68, 69, 79, 82} <= codes
