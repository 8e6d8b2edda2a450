"""The group's partition assignor: whole tasks to members, sticky where possible.

Each member sends, in its subscription's user data, the address its interactive-query
server answers on, the tasks it owns now, and the tasks it has local state for. The
leader computes the tasks (``TaskLayout``) from the cluster's partition counts and gives
every member whole tasks, so the co-partitioned partitions of a task never split.

Placement, step by step (:func:`assign_tasks`):

1. a task stays with the member that owns it now, while that member is under its quota;
2. a task nobody kept goes to a member with local state for it, while under quota
   (its restore starts from a checkpoint instead of from zero);
3. the rest go, in task order, to the least loaded member.

Quotas are ``floor(tasks / members)``, with the first ``tasks % members`` members that
ask allowed one more, so the result is balanced to within one task.

Every member's assignment carries the whole task-to-address map, so any instance can
say where a key lives.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiokafka.cluster import ClusterMetadata
from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)

from ._partition_groups import TaskLayout

log = logging.getLogger("streams.runtime.assignor")


@dataclass(frozen=True)
class MemberInfo:
    host: str = ""
    owned: tuple[str, ...] = ()
    local: tuple[str, ...] = ()


def assign_tasks(tasks: Iterable[str], members: Mapping[str, MemberInfo]) -> dict[str, list[str]]:
    """Place ``tasks`` on ``members`` (see the module docstring for the steps)."""
    order = sorted(members)
    result: dict[str, list[str]] = {m: [] for m in order}
    todo = sorted(tasks, key=_task_key)
    if not order:
        return result
    base, extra = divmod(len(todo), len(order))
    extras_left = extra

    def room(member: str) -> bool:
        nonlocal extras_left
        load = len(result[member])
        if load < base:
            return True
        if load == base and extras_left > 0:
            extras_left -= 1
            return True
        return False

    placed: set[str] = set()
    for attr in ("owned", "local"):
        wanted = set(todo)
        for member in order:
            for task in sorted(getattr(members[member], attr), key=_task_key):
                if task in wanted and task not in placed and room(member):
                    result[member].append(task)
                    placed.add(task)
    for task in todo:
        if task in placed:
            continue
        member = min(order, key=lambda m: (len(result[m]), order.index(m)))
        result[member].append(task)
        placed.add(task)
    for member in order:
        result[member].sort(key=_task_key)
    return result


def _task_key(task: str) -> tuple[int, int]:
    sub, _, partition = task.partition("_")
    return int(sub), int(partition)


@dataclass
class AssignmentView:
    """What this member learnt from the last assignment: its tasks and everyone's hosts."""

    tasks: tuple[str, ...] = ()
    hosts: dict[str, str] = field(default_factory=dict)  # task -> host:port
    generation: int = 0


class PartitionGroupAssignor(AbstractPartitionAssignor):  # type: ignore[misc]
    """An aiokafka assignor instance bound to one application's layout and address."""

    name = "headrace-streams"
    version = 0

    def __init__(
        self,
        sources: Mapping[int, tuple[str, ...]],
        host: str,
        local_tasks: Callable[[], Iterable[str]] = tuple,
    ) -> None:
        self._sources = dict(sources)
        self.host = host
        self._local_tasks = local_tasks
        self.view = AssignmentView()

    def metadata(self, topics: Iterable[str]) -> ConsumerProtocolMemberMetadata:
        info = {"host": self.host, "owned": list(self.view.tasks), "local": sorted(self._local_tasks())}
        return ConsumerProtocolMemberMetadata(
            self.version, sorted(topics), json.dumps(info).encode()
        )

    def assign(
        self, cluster: ClusterMetadata, members: Mapping[str, ConsumerProtocolMemberMetadata]
    ) -> dict[str, ConsumerProtocolMemberAssignment]:
        counts: dict[str, int] = {}
        for topics in self._sources.values():
            for topic in topics:
                partitions = cluster.partitions_for_topic(topic)
                counts[topic] = len(partitions) if partitions else 0
        layout = TaskLayout(self._sources, counts)
        tasks = layout.tasks()
        infos = {m: _decode(meta.user_data) for m, meta in members.items()}
        placed = assign_tasks(tasks, infos)
        hosts = {task: infos[m].host for m, owned in placed.items() for task in owned}
        log.info("assigned %d tasks to %d members: %s", len(tasks), len(members), placed)
        out = {}
        for member, owned in placed.items():
            by_topic: dict[str, list[int]] = {}
            for task in owned:
                for topic, partition in tasks[task]:
                    by_topic.setdefault(topic, []).append(partition)
            user_data = json.dumps({"tasks": owned, "hosts": hosts}).encode()
            out[member] = ConsumerProtocolMemberAssignment(
                self.version, sorted((t, sorted(ps)) for t, ps in by_topic.items()), user_data
            )
        return out

    def on_assignment(self, assignment: ConsumerProtocolMemberAssignment) -> None:
        try:
            data = json.loads(assignment.user_data or b"{}")
        except ValueError:
            data = {}
        self.view = AssignmentView(
            tuple(data.get("tasks", ())), dict(data.get("hosts", {})), self.view.generation + 1
        )


def _decode(user_data: Any) -> MemberInfo:
    try:
        data = json.loads(user_data or b"{}")
        return MemberInfo(
            str(data.get("host", "")), tuple(data.get("owned", ())), tuple(data.get("local", ()))
        )
    except (ValueError, AttributeError):
        return MemberInfo()
