"""The group coordinator: classic consumer groups and committed offsets.

``GroupCoordinator`` is the protocol logic with no I/O (drive it with a
``ManualClock`` in tests); ``GroupService`` wires it into the broker: timers on the
event loop, records in the compacted internal topic ``__consumer_offsets`` (Kafka's
own key and value formats), state rebuilt from that topic at start. Errors are rooted
at ``GroupError`` (tree in ``_errors``).
"""

from headrace.base import Clock as Clock
from headrace.base import CoordinatorNotAvailableError as CoordinatorNotAvailableError
from headrace.base import IllegalTransitionError as IllegalTransitionError
from headrace.base import ManualClock as ManualClock
from headrace.base import SystemClock as SystemClock
from headrace.base import TopicPartition as TopicPartition

from ._assignors import Partition as Partition
from ._assignors import TopicInfo as TopicInfo
from ._codec import GroupKey as GroupKey
from ._codec import GroupValue as GroupValue
from ._codec import MemberValue as MemberValue
from ._codec import OffsetKey as OffsetKey
from ._codec import OffsetValue as OffsetValue
from ._codec import decode_group_value as decode_group_value
from ._codec import decode_key as decode_key
from ._codec import decode_offset_value as decode_offset_value
from ._codec import encode_group_key as encode_group_key
from ._codec import encode_group_value as encode_group_value
from ._codec import encode_offset_key as encode_offset_key
from ._codec import encode_offset_value as encode_offset_value
from ._codec import partition_for as partition_for
from ._config import OFFSETS_TOPIC as OFFSETS_TOPIC
from ._config import GroupConfig as GroupConfig
from ._consumer_group import ConsumerGroup as ConsumerGroup
from ._consumer_group import ConsumerGroupState as ConsumerGroupState
from ._consumer_group import ConsumerMember as ConsumerMember
from ._consumer_groups import Heartbeat as Heartbeat
from ._consumer_groups import HeartbeatResult as HeartbeatResult
from ._coordinator import GroupCoordinator as GroupCoordinator
from ._coordinator import GroupDescription as GroupDescription
from ._coordinator import GroupListing as GroupListing
from ._coordinator import MemberDescription as MemberDescription
from ._coordinator import NewOffset as NewOffset
from ._core import Write as Write
from ._errors import FencedInstanceIdError as FencedInstanceIdError
from ._errors import GroupCoordinatorNotAvailableError as GroupCoordinatorNotAvailableError
from ._errors import GroupError as GroupError
from ._errors import GroupIdNotFoundError as GroupIdNotFoundError
from ._errors import IllegalGenerationError as IllegalGenerationError
from ._errors import IllegalGroupTransitionError as IllegalGroupTransitionError
from ._errors import InconsistentGroupProtocolError as InconsistentGroupProtocolError
from ._errors import InvalidGroupIdError as InvalidGroupIdError
from ._errors import InvalidSessionTimeoutError as InvalidSessionTimeoutError
from ._errors import MemberError as MemberError
from ._errors import MemberIdRequiredError as MemberIdRequiredError
from ._errors import NonEmptyGroupError as NonEmptyGroupError
from ._errors import OffsetCommitSizeError as OffsetCommitSizeError
from ._errors import OffsetsRecordError as OffsetsRecordError
from ._errors import RebalanceInProgressError as RebalanceInProgressError
from ._errors import UnknownMemberIdError as UnknownMemberIdError
from ._group import JoinedMember as JoinedMember
from ._group import JoinResult as JoinResult
from ._loader import OffsetsReplay as OffsetsReplay
from ._machine import GROUP_TRANSITIONS as GROUP_TRANSITIONS
from ._machine import MEMBER_TRANSITIONS as MEMBER_TRANSITIONS
from ._machine import GroupState as GroupState
from ._machine import MemberState as MemberState
from ._membership import JoinRequest as JoinRequest
from ._reply import Reply as Reply
from ._service import GroupService as GroupService
from ._service import replay_log as replay_log
from ._service import wait_reply as wait_reply

__all__ = [
    "GROUP_TRANSITIONS",
    "MEMBER_TRANSITIONS",
    "OFFSETS_TOPIC",
    "Clock",
    "ConsumerGroup",
    "ConsumerGroupState",
    "ConsumerMember",
    "CoordinatorNotAvailableError",
    "FencedInstanceIdError",
    "GroupConfig",
    "GroupCoordinator",
    "GroupCoordinatorNotAvailableError",
    "GroupDescription",
    "GroupError",
    "GroupIdNotFoundError",
    "GroupKey",
    "GroupListing",
    "GroupService",
    "GroupState",
    "GroupValue",
    "Heartbeat",
    "HeartbeatResult",
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
    "Partition",
    "RebalanceInProgressError",
    "Reply",
    "SystemClock",
    "TopicInfo",
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
