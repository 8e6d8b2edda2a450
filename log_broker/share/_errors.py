"""Errors of share groups; each carries the Kafka error code a handler answers with.

ShareError
├── InvalidShareConfigError     a group config value out of range (INVALID_CONFIG)
├── InvalidRecordStateError     acknowledging records not acquired by the member
├── UnknownSharePartitionError  acknowledging records of a partition that does not exist
├── UnknownShareMemberError     a heartbeat from a member the group does not know
├── FencedShareMemberError      a heartbeat with an epoch ahead of the member's
├── ShareGroupFullError         group.share.max.size members, or max.groups groups
├── ShareSessionNotFoundError   a session epoch > 0 with no open session
├── InvalidShareSessionEpochError  an epoch other than the session's next one
└── ShareSessionLimitError      group.share.max.share.sessions sessions already
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode


class ShareError(Exception):
    code: ErrorCode = ErrorCode.unknown_server_error
    retriable = False


class InvalidShareConfigError(ShareError, ValueError):
    code = ErrorCode.invalid_config


class InvalidRecordStateError(ShareError):
    code = ErrorCode.invalid_record_state


class UnknownSharePartitionError(ShareError):
    code = ErrorCode.unknown_topic_or_partition


class UnknownShareMemberError(ShareError):
    code = ErrorCode.unknown_member_id


class FencedShareMemberError(ShareError):
    code = ErrorCode.fenced_member_epoch


class ShareGroupFullError(ShareError):
    code = ErrorCode.group_max_size_reached


class ShareSessionNotFoundError(ShareError):
    code = ErrorCode.share_session_not_found
    retriable = True


class InvalidShareSessionEpochError(ShareError):
    code = ErrorCode.invalid_share_session_epoch
    retriable = True


class ShareSessionLimitError(ShareError):
    code = ErrorCode.share_session_limit_reached
    retriable = True
