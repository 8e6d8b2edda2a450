"""Share-group membership, assignment and share sessions."""

from __future__ import annotations

import uuid

import pytest

from headrace.log_broker.share import ShareConfig
from headrace.log_broker.share._codec import StateKey
from headrace.log_broker.share._coordinator import LogBounds, ShareCoordinator
from headrace.log_broker.share._errors import (
    FencedShareMemberError,
    InvalidShareSessionEpochError,
    ShareGroupFullError,
    ShareSessionLimitError,
    ShareSessionNotFoundError,
    UnknownShareMemberError,
)
from headrace.log_broker.share._group import HeartbeatRequest, ShareGroup
from headrace.log_broker.share._partition import RecordState
from headrace.log_broker.share._sessions import ShareSessions

COUNTS = {"t": 2, "u": 1}.get


def beat(
    group: ShareGroup, member: str, epoch: int, topics: tuple[str, ...] | None = ("t",)
) -> object:
    return group.heartbeat(
        HeartbeatRequest(member, epoch, "c", "/h", None, topics), 0, 1000, COUNTS
    )


def test_every_member_gets_every_subscribed_partition() -> None:
    group = ShareGroup("g", max_members=5)
    a = group.heartbeat(HeartbeatRequest("a", 0, "c", "/h", None, ("t",)), 0, 1000, COUNTS)
    b = group.heartbeat(HeartbeatRequest("b", 0, "c", "/h", None, ("t", "u")), 0, 1000, COUNTS)
    assert a.assignment == {"t": (0, 1)}
    assert b.assignment == {"t": (0, 1), "u": (0,)}
    again = group.heartbeat(HeartbeatRequest("a", a.member_epoch, "c", "/h"), 0, 1000, COUNTS)
    assert again.assignment is None  # unchanged: not sent again
    assert again.member_epoch == group.epoch


def test_heartbeat_errors_and_leave() -> None:
    group = ShareGroup("g", max_members=1)
    joined = group.heartbeat(HeartbeatRequest("a", 0, "c", "/h", None, ("t",)), 0, 1000, COUNTS)
    with pytest.raises(UnknownShareMemberError):
        group.heartbeat(HeartbeatRequest("x", 3, "c", "/h"), 0, 1000, COUNTS)
    with pytest.raises(FencedShareMemberError):
        group.heartbeat(HeartbeatRequest("a", joined.member_epoch + 1, "c", "/h"), 0, 1000, COUNTS)
    with pytest.raises(ShareGroupFullError):
        group.heartbeat(HeartbeatRequest("b", 0, "c", "/h", None, ("t",)), 0, 1000, COUNTS)
    assert group.expired(999) == [] and group.expired(1000) == ["a"]
    left = group.heartbeat(HeartbeatRequest("a", -1, "c", "/h"), 0, 1000, COUNTS)
    assert left.member_epoch == -1 and not group.members


def test_session_epochs() -> None:
    sessions = ShareSessions(max_sessions=1)
    with pytest.raises(ShareSessionNotFoundError):
        sessions.begin("g", "a", 1)
    sessions.begin("g", "a", 0)
    sessions.begin("g", "a", 1)
    with pytest.raises(InvalidShareSessionEpochError):
        sessions.begin("g", "a", 1)
    sessions.begin("g", "a", 2)
    with pytest.raises(ShareSessionLimitError):
        sessions.begin("g", "b", 0)
    sessions.begin("g", "a", -1)
    assert sessions.close("g", "a") is not None
    sessions.begin("g", "b", 0)


def test_a_member_timing_out_releases_its_records_and_its_session() -> None:
    coordinator = ShareCoordinator(ShareConfig(session_timeout_ms=1000), {})
    key = StateKey("g", uuid.uuid4(), 0)
    for member in ("a", "b"):
        coordinator.heartbeat("g", HeartbeatRequest(member, 0, "c", "/h", None, ("t",)), 0, COUNTS)
        coordinator.session("g", member, 0)
    with pytest.raises(UnknownShareMemberError):
        coordinator.session("g", "stranger", 0)
    partition = coordinator.partition(key, LogBounds(0, 0))  # latest: starts at 0
    assert partition.acquire("a", 0, 5, [(0, 4)])
    coordinator.heartbeat("g", HeartbeatRequest("b", 1, "c", "/h"), 500, COUNTS)
    # leaving keeps the leaver's locks: its last acknowledgements may still arrive
    coordinator.heartbeat("g", HeartbeatRequest("b", -1, "c", "/h"), 600, COUNTS)
    assert coordinator.sessions.get("g", "b") is not None
    assert coordinator.expire_members(1000) == [("g", "a")]
    assert coordinator.sessions.get("g", "a") is None
    assert coordinator.sessions.get("g", "b") is not None  # closed a session timeout later
    coordinator.expire_members(1600)
    assert coordinator.sessions.get("g", "b") is None
    assert partition.count(RecordState.AVAILABLE) == 5
    assert coordinator.take_dirty()  # the release is persisted
