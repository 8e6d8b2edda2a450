"""Errors of the group coordinator.

Each error carries ``retriable`` (may the client simply try again?) and ``error_code``
(the Kafka protocol error code a handler answers with), like storage's errors, so a
handler translates any of them without a table of its own.

GroupError                            root; never raised itself
+-- InvalidGroupIdError               empty group id                          (24)
+-- GroupCoordinatorNotAvailableError group being deleted, or its log failed  (15, retriable)
|   (a headrace.base.CoordinatorNotAvailableError)
+-- InvalidSessionTimeoutError        outside the broker's allowed range      (26)
+-- InconsistentGroupProtocolError    no protocol shared with the group       (23)
+-- MemberError                       the request's member is not current
|   +-- UnknownMemberIdError          no such member (or it was removed)      (25)
|   +-- MemberIdRequiredError         first join: rejoin with the given id    (79)
|   +-- FencedInstanceIdError         a newer member took this instance id    (82)
|   +-- IllegalGenerationError        the member's generation is old          (22)
|   +-- FencedMemberEpochError        consumer protocol: heartbeat epoch ahead or lost (110)
|   +-- StaleMemberEpochError         consumer protocol: commit at another epoch (113)
|   +-- UnreleasedInstanceIdError     static id still held by a live member   (111)
+-- UnsupportedAssignorError          no server assignor of that name         (112)
+-- InvalidGroupRequestError          a heartbeat missing what its epoch needs (42)
+-- InvalidRegularExpressionError     a subscription regex that cannot compile (128)
+-- GroupMaxSizeReachedError          group.consumer.max.size reached         (81)
+-- RebalanceInProgressError          rejoin: the group is rebalancing        (27)
+-- GroupIdNotFoundError              delete of a group that does not exist   (69)
+-- NonEmptyGroupError                delete of a group that has members      (68)
+-- OffsetCommitSizeError             the commit does not fit one record batch (28)
+-- IllegalGroupTransitionError       a lifecycle step the tables forbid: a bug (-1)
|   (a headrace.base.IllegalTransitionError)
+-- OffsetsRecordError                a __consumer_offsets record that cannot be read
"""

from __future__ import annotations

from headrace.base import CoordinatorNotAvailableError, IllegalTransitionError


class GroupError(Exception):
    """Root of every error the group coordinator raises."""

    retriable: bool = False
    error_code: int = -1  # UNKNOWN_SERVER_ERROR


class InvalidGroupIdError(GroupError):
    error_code = 24


class GroupCoordinatorNotAvailableError(GroupError, CoordinatorNotAvailableError):
    retriable = True
    error_code = CoordinatorNotAvailableError.error_code


class InvalidSessionTimeoutError(GroupError):
    error_code = 26


class InconsistentGroupProtocolError(GroupError):
    error_code = 23


class MemberError(GroupError):
    """The member named in a request is not a current member of the group."""


class UnknownMemberIdError(MemberError):
    error_code = 25


class MemberIdRequiredError(MemberError):
    """Answer to a first JoinGroup without a member id: the id to rejoin with."""

    error_code = 79

    def __init__(self, member_id: str) -> None:
        super().__init__(f"member id required; rejoin as {member_id}")
        self.member_id = member_id


class FencedInstanceIdError(MemberError):
    error_code = 82


class IllegalGenerationError(MemberError):
    error_code = 22


class RebalanceInProgressError(GroupError):
    error_code = 27


class GroupIdNotFoundError(GroupError):
    error_code = 69


class NonEmptyGroupError(GroupError):
    error_code = 68


class GroupSubscribedToTopicError(GroupError):
    error_code = 86


class OffsetCommitSizeError(GroupError):
    error_code = 28  # INVALID_COMMIT_OFFSET_SIZE


class IllegalGroupTransitionError(GroupError, IllegalTransitionError):
    """A lifecycle step that the transition tables do not allow: a coordinator bug."""


class OffsetsRecordError(GroupError):
    """A ``__consumer_offsets`` record in a format this broker cannot read."""


class FencedMemberEpochError(MemberError):
    error_code = 110


class StaleMemberEpochError(MemberError):
    error_code = 113


class UnreleasedInstanceIdError(MemberError):
    error_code = 111


class UnsupportedAssignorError(GroupError):
    error_code = 112


class InvalidGroupRequestError(GroupError):
    error_code = 42  # INVALID_REQUEST


class InvalidRegularExpressionError(GroupError):
    error_code = 128


class GroupMaxSizeReachedError(GroupError):
    error_code = 81
