import json
from typing import Any

import pytest
from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata

from streams.runtime import CoPartitionError, PartitionGroupAssignor, TaskLayout, assign_tasks
from streams.runtime._assignor import MemberInfo

TASKS = [f"0_{p}" for p in range(6)]


def test_co_partitioned_sources_form_one_task_per_partition() -> None:
    layout = TaskLayout({0: ("a", "b"), 1: ("c",)}, {"a": 2, "b": 2, "c": 1})
    assert layout.tasks() == {
        "0_0": (("a", 0), ("b", 0)), "0_1": (("a", 1), ("b", 1)), "1_0": (("c", 0),),
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
    placed = assign_tasks(TASKS, {"a": MemberInfo(), "b": MemberInfo(local=("0_4", "0_5"))})
    assert {"0_4", "0_5"} <= set(placed["b"])


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
