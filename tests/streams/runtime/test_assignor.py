import json
from collections import Counter
from typing import Any

import pytest
from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata

from headrace.streams.runtime import (
    CoPartitionError,
    PartitionGroupAssignor,
    TaskLayout,
    assign_tasks,
)
from headrace.streams.runtime._assignor import MemberInfo, _decode, assign_standbys

TASKS = [f"0_{p}" for p in range(6)]


def test_co_partitioned_sources_form_one_task_per_partition() -> None:
    layout = TaskLayout({0: ("a", "b"), 1: ("c",)}, {"a": 2, "b": 2, "c": 1})
    assert layout.tasks() == {
        "0_0": (("a", 0), ("b", 0)),
        "0_1": (("a", 1), ("b", 1)),
        "1_0": (("c", 0),),
    }


def test_sources_with_different_partition_counts_are_refused() -> None:
    with pytest.raises(CoPartitionError, match="co-partitioned"):
        TaskLayout({0: ("a", "b")}, {"a": 2, "b": 3}).check()


def test_tasks_spread_evenly_over_new_members() -> None:
    placed = assign_tasks(TASKS, {"m1": MemberInfo(), "m2": MemberInfo(), "m3": MemberInfo()})
    assert sorted(len(t) for t in placed.values()) == [2, 2, 2]
    assert sorted(t for ts in placed.values() for t in ts) == TASKS


def test_owners_keep_their_tasks_when_a_member_joins() -> None:
    before = {"m1": MemberInfo(owned=tuple(TASKS[:3])), "m2": MemberInfo(owned=tuple(TASKS[3:]))}
    assert assign_tasks(TASKS, before) == {"m1": TASKS[:3], "m2": TASKS[3:]}
    after = assign_tasks(TASKS, {**before, "m3": MemberInfo()})
    assert sorted(len(t) for t in after.values()) == [2, 2, 2]
    # each old owner keeps two of its own tasks; only one task per old owner moves
    assert set(after["m1"]) <= set(TASKS[:3]) and set(after["m2"]) <= set(TASKS[3:])


def test_local_state_is_preferred_for_tasks_nobody_owns() -> None:
    placed = assign_tasks(TASKS, {"a": MemberInfo(), "b": MemberInfo(local={"0_4": 7, "0_5": 0})})
    assert {"0_4", "0_5"} <= set(placed["b"])


def test_an_orphaned_task_goes_to_the_most_caught_up_local_state() -> None:
    # c died; a held a stale copy of its task 0_2, b a standby that is nearly current
    members = {
        "a": MemberInfo(owned=("0_0",), local={"0_0": 50, "0_2": 10}),
        "b": MemberInfo(owned=("0_1",), local={"0_1": 40, "0_2": 900}),
    }
    placed = assign_tasks(["0_0", "0_1", "0_2"], members)
    assert "0_2" in placed["b"] and placed["a"] == ["0_0"]


def test_uneven_counts_differ_by_at_most_one() -> None:
    placed = assign_tasks(TASKS[:5], {"x": MemberInfo(owned=tuple(TASKS[:5])), "y": MemberInfo()})
    assert sorted(len(t) for t in placed.values()) == [2, 3]


class _Cluster:
    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        n = self.counts.get(topic)
        return None if n is None else set(range(n))


def test_assignor_gives_whole_tasks_and_everyone_the_host_map() -> None:
    assignors = {m: PartitionGroupAssignor({0: ("a", "b")}, f"{m}:80") for m in ("m1", "m2")}
    members = {m: a.metadata(["a", "b"]) for m, a in assignors.items()}
    out = assignors["m1"].assign(_Cluster({"a": 4, "b": 4}), members)
    for member, assignment in out.items():
        parts = dict(assignment.assignment)
        assert parts["a"] == parts["b"]  # co-partitioned partitions travel together
        assignors[member].on_assignment(assignment)
    hosts = assignors["m2"].view.hosts
    assert sorted(hosts) == ["0_0", "0_1", "0_2", "0_3"]
    assert set(hosts.values()) == {"m1:80", "m2:80"}
    for member, a in assignors.items():
        assert all(hosts[t] == f"{member}:80" for t in a.view.tasks)
    meta: Any = assignors["m1"].metadata(["a", "b"])
    assert isinstance(meta, ConsumerProtocolMemberMetadata)
    assert json.loads(meta.user_data)["owned"] == list(assignors["m1"].view.tasks)


def _standby_invariants(standbys: dict[str, list[str]], active: dict[str, list[str]]) -> None:
    for member, tasks in standbys.items():
        assert not set(tasks) & set(active[member]), "a standby sits with its active task"
        assert len(tasks) == len(set(tasks)), "two standbys of one task on one member"


def test_every_stateful_task_gets_its_standbys_on_other_members() -> None:
    members = {m: MemberInfo() for m in ("a", "b", "c")}
    active = assign_tasks(TASKS, members)
    standbys = assign_standbys(TASKS[:4], active, members, 2)
    _standby_invariants(standbys, active)
    held = Counter(t for tasks in standbys.values() for t in tasks)
    assert held == {t: 2 for t in TASKS[:4]}  # stateless tasks 0_4, 0_5 get none
    loads = [len(active[m]) + len(standbys[m]) for m in members]
    assert max(loads) - min(loads) <= 1


def test_too_few_members_give_fewer_standbys() -> None:
    members = {"a": MemberInfo(), "b": MemberInfo()}
    active = assign_tasks(TASKS, members)
    standbys = assign_standbys(TASKS, active, members, 3)
    _standby_invariants(standbys, active)
    assert Counter(t for tasks in standbys.values() for t in tasks) == dict.fromkeys(TASKS, 1)
    assert assign_standbys(TASKS, {"a": TASKS}, {"a": MemberInfo()}, 1) == {"a": []}


def test_a_standby_stays_where_its_state_is() -> None:
    active = {"a": ["0_0", "0_1"], "b": ["0_2", "0_3"], "c": ["0_4", "0_5"]}
    members = {
        "a": MemberInfo(local={"0_0": 5, "0_1": 5, "0_4": 300}),
        "b": MemberInfo(local={"0_2": 5, "0_3": 5, "0_0": 200}),
        "c": MemberInfo(local={"0_4": 5, "0_5": 5}),
    }
    standbys = assign_standbys(["0_0", "0_4"], active, members, 1)
    assert standbys == {"a": ["0_4"], "b": ["0_0"], "c": []}


def test_when_the_active_member_dies_its_standby_member_takes_the_task() -> None:
    members = {m: MemberInfo() for m in ("a", "b", "c")}
    active = assign_tasks(TASKS, members)
    standbys = assign_standbys(TASKS, active, members, 1)
    # "a" dies; each survivor reports the offset sums of what it holds
    survivors = {
        m: MemberInfo(owned=tuple(active[m]), local={t: 1000 for t in active[m] + standbys[m]})
        for m in ("b", "c")
    }
    after = assign_tasks(TASKS, survivors)
    for task in active["a"]:
        holder = next(m for m in ("b", "c") if task in standbys[m])
        assert task in after[holder], (task, holder, after)


def test_assignment_tells_each_member_its_standbys_and_offset_sums_travel() -> None:
    sums = {"m1": {"0_1": 42}, "m2": {}}
    assignors = {
        m: PartitionGroupAssignor(
            {0: ("a",)},
            f"{m}:80",
            lambda m=m: sums[m],  # type: ignore[misc]
            stateful={0},
            standby_replicas=1,
        )
        for m in ("m1", "m2")
    }
    members = {m: a.metadata(["a"]) for m, a in assignors.items()}
    assert _decode(members["m1"].user_data).local == {"0_1": 42}
    out = assignors["m1"].assign(_Cluster({"a": 4}), members)
    for member, assignment in out.items():
        assignors[member].on_assignment(assignment)
    views = {m: a.view for m, a in assignors.items()}
    for view in views.values():
        assert not set(view.standby) & set(view.tasks)
    assert sorted(views["m1"].standby + views["m2"].standby) == ["0_0", "0_1", "0_2", "0_3"]


def test_members_that_send_a_plain_list_of_local_tasks_are_understood() -> None:
    info = _decode(json.dumps({"host": "h:1", "owned": ["0_0"], "local": ["0_1"]}).encode())
    assert info.local == {"0_1": 0} and info.owned == ("0_0",)
    assert _decode(b"not json") == MemberInfo()
