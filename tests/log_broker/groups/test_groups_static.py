"""Static membership (group.instance.id): restarts within the session cause no rebalance."""

from __future__ import annotations

from typing import TypedDict

import pytest
from group_harness import Harness

from headrace.log_broker.groups import FencedInstanceIdError, GroupState, UnknownMemberIdError


class _Timeouts(TypedDict):
    session_ms: int
    rebalance_ms: int


SESSION: _Timeouts = {"session_ms": 60_000, "rebalance_ms": 30_000}


def form_static(h: Harness) -> tuple[int, dict[str, str]]:
    """Instances "a" (leader) and "b" reach Stable in generation 2."""
    a = h.join("g", instance="a", **SESSION).result()  # static: an id at once, generation 1
    assert a.generation == 1
    b_reply = h.join("g", instance="b", **SESSION)
    assert not b_reply.done
    a2 = h.join("g", a.member_id, instance="a", **SESSION).result()
    b = b_reply.result()
    assert a2.generation == b.generation == 2 and a2.leader == a.member_id
    ids = {"a": a.member_id, "b": b.member_id}
    h.sync("g", 2, ids["b"], instance="b")
    h.sync("g", 2, ids["a"], {ids["a"]: b"for-a", ids["b"]: b"for-b"}, instance="a")
    assert h.coordinator.describe("g").state is GroupState.STABLE
    return 2, ids


def test_static_member_restart_keeps_generation_and_assignment(h: Harness) -> None:
    generation, ids = form_static(h)
    rejoin = h.join("g", instance="b", **SESSION).result()  # "b" restarted, lost its id
    assert rejoin.generation == generation
    assert rejoin.member_id not in ids.values()
    assert h.coordinator.describe("g").state is GroupState.STABLE
    assert h.sync("g", generation, rejoin.member_id, instance="b").result() == b"for-b"
    # The old incarnation is fenced everywhere.
    assert isinstance(h.heartbeat("g", generation, ids["b"], instance="b"), FencedInstanceIdError)
    with pytest.raises(FencedInstanceIdError):
        h.sync("g", generation, ids["b"], instance="b").result()
    with pytest.raises(FencedInstanceIdError):
        h.join("g", ids["b"], instance="b", **SESSION).result()
    [left] = h.coordinator.leave("g", [(ids["b"], "b")])
    assert isinstance(left, FencedInstanceIdError)


def test_static_restart_is_persisted_before_it_is_answered() -> None:
    h = Harness(auto_flush=False)
    h.auto_flush = True
    generation, _ = form_static(h)
    h.auto_flush = False
    rejoin = h.join("g", instance="a", **SESSION)
    assert not rejoin.done
    assert h.flush()
    assert rejoin.result().generation == generation


def test_static_leader_restart_keeps_leading(h: Harness) -> None:
    generation, ids = form_static(h)
    rejoin = h.join("g", instance="a", **SESSION).result()
    assert rejoin.leader == rejoin.member_id != ids["a"]
    assert {m.member_id for m in rejoin.members} == {rejoin.member_id, ids["b"]}
    assert h.sync("g", generation, rejoin.member_id, instance="a").result() == b"for-a"
    assert h.coordinator.describe("g").state is GroupState.STABLE


def test_static_member_that_stays_away_expires(h: Harness) -> None:
    generation, ids = form_static(h)
    for _ in range(7):
        h.advance(9_000)
        h.heartbeat("g", generation, ids["a"], instance="a")
    assert [m.group_instance_id for m in h.coordinator.describe("g").members] == ["a"]


def test_static_member_leaves_by_instance_id(h: Harness) -> None:
    _, _ids = form_static(h)
    assert h.coordinator.leave("g", [("", "b")]) == [None]
    assert [m.group_instance_id for m in h.coordinator.describe("g").members] == ["a"]
    [error] = h.coordinator.leave("g", [("nobody", None)])
    assert isinstance(error, UnknownMemberIdError)


def test_static_member_not_rejoining_keeps_its_place_in_a_rebalance(h: Harness) -> None:
    generation, ids = form_static(h)
    newcomer = h.join("g", instance="c", **SESSION)
    h.join("g", ids["a"], instance="a", **SESSION)
    h.advance(30_000)  # rebalance timeout: "b" never rejoined, but it is static
    result = newcomer.result()
    assert result.generation == generation + 1
    members = {m.group_instance_id: m.member_id for m in h.coordinator.describe("g").members}
    assert members.keys() == {"a", "b", "c"} and members["b"] == ids["b"]
