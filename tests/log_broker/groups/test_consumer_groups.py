"""The consumer group protocol's state machine (KIP-848), driven with a manual clock."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Mapping

import pytest

from headrace.base import ManualClock, TopicPartition
from headrace.log_broker.groups import GroupConfig
from headrace.log_broker.groups._assignors import (
    AssignorMember,
    Partition,
    TopicInfo,
    range_,
    uniform,
)
from headrace.log_broker.groups._consumer_group import ConsumerGroupState
from headrace.log_broker.groups._consumer_groups import ConsumerGroups, Heartbeat, HeartbeatResult
from headrace.log_broker.groups._errors import (
    FencedMemberEpochError,
    InvalidGroupRequestError,
    InvalidRegularExpressionError,
    StaleMemberEpochError,
    UnknownMemberIdError,
    UnreleasedInstanceIdError,
    UnsupportedAssignorError,
)

T1 = uuid.UUID(int=1)
T2 = uuid.UUID(int=2)
CONFIG = GroupConfig(consumer_session_timeout_ms=1_000, consumer_heartbeat_interval_ms=100)


class World:
    def __init__(self, partitions: int = 6, config: GroupConfig = CONFIG) -> None:
        self.clock = ManualClock()
        self.catalog: dict[str, TopicInfo] = {"t": TopicInfo(T1, "t", partitions)}
        ids = (f"m{i}" for i in itertools.count())
        self.groups = ConsumerGroups(config, self.clock, lambda: self.catalog, lambda: next(ids))
        self.epochs: dict[str, int] = {}
        self.owned: dict[str, frozenset[Partition]] = {}

    def join(self, member_id: str, **fields: object) -> HeartbeatResult:
        fields.setdefault("topic_names", ("t",))
        fields.setdefault("owned", frozenset())  # present and empty, as a joining client sends it
        fields.setdefault("rebalance_timeout_ms", 5_000)
        result = self.groups.heartbeat(Heartbeat("g", member_id, 0, **fields))  # type: ignore[arg-type]
        self._record(result)
        return result

    def beat(self, member_id: str, owned: frozenset[Partition] | None = None) -> HeartbeatResult:
        result = self.groups.heartbeat(
            Heartbeat("g", member_id, self.epochs[member_id], owned=owned)
        )
        self._record(result)
        return result

    def _record(self, result: HeartbeatResult) -> None:
        self.epochs[result.member_id] = result.member_epoch
        if result.assignment is not None:
            self.owned[result.member_id] = result.assignment

    def settle(self, rounds: int = 6) -> None:
        """Every member heartbeats, reporting exactly what it was last told to own."""
        for _ in range(rounds):
            for member_id in list(self.owned):
                self.beat(member_id, self.owned[member_id])
                assert_no_double_owner(self.owned)


def assert_no_double_owner(owned: Mapping[str, frozenset[Partition]]) -> None:
    seen: dict[Partition, str] = {}
    for member_id, partitions in owned.items():
        for p in partitions:
            assert p not in seen, f"{p} owned by {seen[p]} and {member_id}"
            seen[p] = member_id


def test_first_member_gets_every_partition_at_epoch_one() -> None:
    w = World()
    result = w.join("a")
    assert result.member_epoch == 1
    assert result.assignment == frozenset((T1, p) for p in range(6))
    assert result.heartbeat_interval_ms == 100


def test_partitions_move_only_after_the_old_owner_revokes_them() -> None:
    w = World()
    w.join("a")
    joined = w.join("b")
    assert joined.assignment == frozenset()  # a still owns everything
    group = w.groups.get("g")
    assert group is not None and group.state is ConsumerGroupState.RECONCILING
    told = w.beat("a", w.owned["a"])
    assert told.assignment is not None and len(told.assignment) == 3  # revoke three
    assert told.member_epoch == 1  # epoch unchanged until revoked
    still = w.beat("b", frozenset())
    assert still.assignment is None or not still.assignment  # nothing released yet
    done = w.beat("a", w.owned["a"])  # now reports only the three it keeps
    assert done.member_epoch == 2
    got = w.beat("b", frozenset())
    assert got.member_epoch == 2 and got.assignment is not None and len(got.assignment) == 3
    assert_no_double_owner(w.owned)
    assert w.groups.get("g") is group and str(group.state.value) == "Stable"


def test_a_member_that_leaves_frees_its_partitions() -> None:
    w = World()
    w.join("a")
    w.join("b")
    w.join("c")
    w.settle()
    assert sorted(len(p) for p in w.owned.values()) == [2, 2, 2]
    left = w.groups.heartbeat(Heartbeat("g", "b", -1))
    assert left.member_epoch == -1
    del w.owned["b"]
    w.settle()
    assert sorted(len(p) for p in w.owned.values()) == [3, 3]


def test_session_timeout_removes_a_silent_member() -> None:
    w = World()
    w.join("a")
    w.join("b")
    w.settle()
    w.clock.advance(600)
    w.beat("a", w.owned["a"])
    w.clock.advance(600)
    w.groups.tick()  # b has been silent for 1,200 ms
    group = w.groups.get("g")
    assert group is not None and set(group.members) == {"a"}
    del w.owned["b"]
    w.settle()
    assert len(w.owned["a"]) == 6


def test_member_that_never_revokes_is_fenced_after_its_rebalance_timeout() -> None:
    w = World()
    w.join("a", rebalance_timeout_ms=300)
    w.join("b")
    w.beat("a", w.owned["a"])  # told to revoke, never does
    for _ in range(4):
        w.clock.advance(100)
        w.beat("b", frozenset())
        w.groups.tick()
    group = w.groups.get("g")
    assert group is not None and "a" not in group.members
    with pytest.raises(UnknownMemberIdError):
        w.beat("a", w.owned["a"])


def test_epoch_checks() -> None:
    w = World()
    w.join("a")
    with pytest.raises(FencedMemberEpochError):
        w.groups.heartbeat(Heartbeat("g", "a", 7, owned=frozenset()))
    with pytest.raises(UnknownMemberIdError):
        w.groups.heartbeat(Heartbeat("g", "zz", 1, owned=frozenset()))
    w.join("b")
    w.settle()
    assert w.epochs["a"] == 2
    # The previous epoch is accepted when the member lost the answer and owns no more
    # than it is assigned.
    again = w.groups.heartbeat(Heartbeat("g", "a", 1, owned=w.owned["a"]))
    assert again.member_epoch == 2


def test_commit_fencing() -> None:
    w = World()
    w.join("a")
    w.join("b")
    w.settle()
    b_owns = [TopicPartition("t", p) for _, p in w.owned["b"]]
    assert w.groups.check_commit("g", "a", w.epochs["a"], b_owns)  # the epoch is a's
    with pytest.raises(StaleMemberEpochError):
        w.groups.check_commit("g", "a", w.epochs["a"] - 1, b_owns)
    with pytest.raises(StaleMemberEpochError):  # as Kafka: FENCED is for heartbeats only
        w.groups.check_commit("g", "a", w.epochs["a"] + 1, b_owns)
    with pytest.raises(UnknownMemberIdError):
        w.groups.check_commit("g", "nobody", 1, b_owns)
    assert not w.groups.check_commit("other", "", -1, b_owns)


def test_static_member_keeps_its_assignment_across_a_restart() -> None:
    w = World()
    w.join("a", instance_id="i1")
    w.join("b")
    w.settle()
    before = w.owned["a"]
    left = w.groups.heartbeat(Heartbeat("g", "a", w.epochs["a"], instance_id="i1"))
    assert left.member_epoch == w.epochs["a"]
    w.groups.heartbeat(Heartbeat("g", "a", -2, instance_id="i1"))
    back = w.join("a2", instance_id="i1")
    assert back.assignment == before


def test_live_static_instance_id_is_not_released() -> None:
    w = World()
    w.join("a", instance_id="i1")
    with pytest.raises(UnreleasedInstanceIdError):
        w.join("a2", instance_id="i1")


def test_static_member_gone_past_its_session_is_removed() -> None:
    w = World()
    w.join("a", instance_id="i1")
    w.groups.heartbeat(Heartbeat("g", "a", -2, instance_id="i1"))
    w.clock.advance(1_001)
    w.groups.tick()
    group = w.groups.get("g")
    assert group is not None and not group.members


def test_regex_subscription_follows_new_topics() -> None:
    w = World()
    w.join("a", topic_names=None, topic_regex="t.*")
    assert w.owned["a"] == {(T1, p) for p in range(6)}
    w.catalog["t2"] = TopicInfo(T2, "t2", 2)
    w.catalog["other"] = TopicInfo(uuid.UUID(int=3), "other", 2)
    got = w.beat("a", w.owned["a"])
    assert got.assignment is not None and (T2, 1) in got.assignment
    assert not any(p[0] == uuid.UUID(int=3) for p in got.assignment)


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"topic_names": None}, InvalidGroupRequestError),
        ({"rebalance_timeout_ms": -1}, InvalidGroupRequestError),
        ({"topic_names": None, "topic_regex": "("}, InvalidRegularExpressionError),
        ({"server_assignor": "nope"}, UnsupportedAssignorError),
        ({"owned": frozenset({(T1, 0)})}, InvalidGroupRequestError),
        ({"owned": None}, InvalidGroupRequestError),  # null TopicPartitions, as Kafka refuses
    ],
)
def test_bad_joins_are_refused(fields: dict[str, object], error: type[Exception]) -> None:
    w = World()
    with pytest.raises(error):
        w.join("a", **fields)


def test_random_joins_and_leaves_never_double_own() -> None:
    import random

    rng = random.Random(7)
    w = World(partitions=12)
    alive: list[str] = []
    for step in range(200):
        action = rng.random()
        if action < 0.15 or not alive:
            name = f"x{step}"
            w.join(name)
            alive.append(name)
        elif action < 0.25 and len(alive) > 1:
            gone = alive.pop(rng.randrange(len(alive)))
            w.groups.heartbeat(Heartbeat("g", gone, -1))
            del w.owned[gone]
        else:
            member = rng.choice(alive)
            w.beat(member, w.owned.get(member, frozenset()))
        assert_no_double_owner(w.owned)
    w.settle(10)
    assert sum(len(p) for p in w.owned.values()) == 12


def _member(
    mid: str, rack: str | None = None, current: frozenset[Partition] = frozenset()
) -> AssignorMember:
    return AssignorMember(mid, rack, frozenset({T1}), current)


def test_uniform_is_balanced_and_sticky() -> None:
    topics = {T1: TopicInfo(T1, "t", 7)}
    first = uniform([_member("a"), _member("b")], topics)
    assert sorted(len(p) for p in first.values()) == [3, 4]
    second = uniform(
        [_member("a", current=first["a"]), _member("b", current=first["b"]), _member("c")], topics
    )
    assert sorted(len(p) for p in second.values()) == [2, 2, 3]
    moved = sum(len(second[m] - first[m]) for m in ("a", "b"))
    assert moved == 0


def test_uniform_prefers_a_rack_that_holds_the_partition() -> None:
    topics = {T1: TopicInfo(T1, "t", 2, racks=frozenset({"r2"}))}
    result = uniform([_member("a", "r1"), _member("b", "r2")], topics)
    assert len(result["a"]) == len(result["b"]) == 1
    topics = {T1: TopicInfo(T1, "t", 1, racks=frozenset({"r2"}))}
    result = uniform([_member("a", "r1"), _member("b", "r2")], topics)
    assert result["b"] == {(T1, 0)}


def test_range_gives_contiguous_ranges() -> None:
    topics = {T1: TopicInfo(T1, "t", 5)}
    result = range_([_member("b"), _member("a")], topics)
    assert result["a"] == {(T1, 0), (T1, 1), (T1, 2)}
    assert result["b"] == {(T1, 3), (T1, 4)}


def test_range_assignor_chosen_by_the_members() -> None:
    w = World(partitions=4)
    w.join("a", server_assignor="range")
    w.join("b", server_assignor="range")
    w.settle()
    assert w.owned["a"] == {(T1, 0), (T1, 1)}


def test_group_consumer_assignors_names_the_default_and_the_choices() -> None:
    from headrace.base import parse_properties
    from headrace.log_broker._server_properties import broker_settings

    settings = broker_settings(parse_properties("group.consumer.assignors=range\n"))
    assert settings["group_consumer_assignors"] == ("range",)
    w = World(partitions=4, config=GroupConfig(consumer_assignors=("range",)))
    w.join("a")  # no server assignor asked for: the first configured one
    w.join("b")
    w.settle()
    assert w.owned["a"] == {(T1, 0), (T1, 1)}
    with pytest.raises(UnsupportedAssignorError, match=r"not among group\.consumer\.assignors"):
        w.join("c", server_assignor="uniform")  # known, but not offered here


def test_a_backtracking_pattern_costs_no_more_than_a_plain_one() -> None:
    """RE2, as Kafka: (a+)+$ against a long name that almost matches is linear, not the
    exponential blow-up of a backtracking engine that would stall the broker."""
    import time

    w = World()
    w.catalog["a" * 200 + "b"] = TopicInfo(T2, "a" * 200 + "b", 1)
    started = time.monotonic()
    w.join("a", topic_names=None, topic_regex="(a+)+$")
    assert time.monotonic() - started < 1
    assert w.owned["a"] == frozenset()
