"""The group's partition assignor: whole tasks to members, sticky where possible, and
standby replicas of stateful tasks on other members.

Each member sends, in its subscription's user data, the address its interactive-query
server answers on, the tasks it owns now, and, per task it has local state for (an open
task, a standby, or a checkpoint on disk), the sum of the changelog offsets that state
covers: the higher the sum, the less there is to restore. The leader computes the tasks
(``TaskLayout``) from the cluster's partition counts and gives every member whole tasks,
so the co-partitioned partitions of a task never split.

Placement of active tasks, step by step (:func:`assign_tasks`):

1. a task stays with the member that owns it now, while that member is under its quota;
2. a task nobody kept goes to the member whose local state for it is the most caught
   up (highest offset sum), while under quota: when an instance dies, its tasks go to the
   members that held their standbys and restore only the changelog's tail;
3. the rest go, in task order, to the least loaded member.

Quotas are ``floor(tasks / members)``, with the first ``tasks % members`` members that
ask allowed one more, so the result is balanced to within one task.

Standby replicas (:func:`assign_standbys`), ``num_standby_replicas`` per stateful task
(one with changelogged stores), never on the member that runs the task and never two on
one member: the least loaded candidate (active and standby tasks counted) gets it, and
among equally loaded candidates the one with the most caught-up local state for the
task, so a standby stays where its state is unless that would unbalance the group. With too few members a task gets
fewer standbys, as in Kafka Streams.

Every member's assignment carries the whole task-to-address map, so any instance can
say where a key lives.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiokafka.cluster import ClusterMetadata
from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)

from ._partition_groups import TaskLayout

log = logging.getLogger("headrace.streams.runtime.assignor")


@dataclass(frozen=True)
class MemberInfo:
    host: str = ""
    owned: tuple[str, ...] = ()
    local: Mapping[str, int] = field(default_factory=dict)  # task -> changelog offset sum


class _Quotas:
    """Balanced to within one: ``base`` tasks each, ``extra`` members may take one more."""

    def __init__(self, tasks: int, members: int) -> None:
        self.base, self._extras = divmod(tasks, members)

    def has_room(self, load: int) -> bool:
        return load < self.base or (load == self.base and self._extras > 0)

    def take(self, load: int) -> None:
        if load == self.base:
            self._extras -= 1


def assign_tasks(tasks: Iterable[str], members: Mapping[str, MemberInfo]) -> dict[str, list[str]]:
    """Place ``tasks`` on ``members`` (see the module docstring for the steps)."""
    order = sorted(members)
    result: dict[str, list[str]] = {m: [] for m in order}
    todo = sorted(tasks, key=_task_key)
    if not order:
        return result
    quotas = _Quotas(len(todo), len(order))
    placed: set[str] = set()

    def place(task: str, member: str) -> None:
        quotas.take(len(result[member]))
        result[member].append(task)
        placed.add(task)

    wanted = set(todo)
    for member in order:  # 1. owners keep their tasks
        for task in sorted(members[member].owned, key=_task_key):
            if task in wanted and task not in placed and quotas.has_room(len(result[member])):
                place(task, member)
    for task in todo:  # 2. the most caught-up local state
        if task in placed:
            continue
        holders = [m for m in order if task in members[m].local and quotas.has_room(len(result[m]))]
        if holders:
            place(task, max(holders, key=lambda m: (members[m].local[task], -order.index(m))))
    for task in todo:  # 3. the least loaded
        if task not in placed:
            place(task, min(order, key=lambda m: (len(result[m]), order.index(m))))
    for member in order:
        result[member].sort(key=_task_key)
    return result


def assign_standbys(
    stateful: Iterable[str],
    active: Mapping[str, Collection[str]],
    members: Mapping[str, MemberInfo],
    replicas: int,
) -> dict[str, list[str]]:
    """Place ``replicas`` standbys of each ``stateful`` task (module docstring)."""
    order = sorted(members)
    result: dict[str, list[str]] = {m: [] for m in order}
    owner = {task: m for m, tasks in active.items() for task in tasks}
    load = {m: len(active.get(m, ())) for m in order}
    short: list[str] = []
    for task in sorted(stateful, key=_task_key):
        for _ in range(replicas):
            candidates = [m for m in order if m != owner.get(task) and task not in result[m]]
            if not candidates:
                short.append(task)
                break

            def preference(m: str, task: str = task) -> tuple[int, int, int]:
                # least loaded; then the most caught-up local state (-1: none at all)
                return load[m], -members[m].local.get(task, -1), order.index(m)

            chosen = min(candidates, key=preference)
            result[chosen].append(task)
            load[chosen] += 1
    if short:
        log.warning(
            "%d members cannot hold %d standby replicas of tasks %s",
            len(order),
            replicas,
            sorted(set(short), key=_task_key),
        )
    for member in order:
        result[member].sort(key=_task_key)
    return result


def _task_key(task: str) -> tuple[int, int]:
    sub, _, partition = task.partition("_")
    return int(sub), int(partition)


@dataclass
class AssignmentView:
    """What this member learnt from the last assignment: its tasks, its standby tasks and
    everyone's hosts."""

    tasks: tuple[str, ...] = ()
    hosts: dict[str, str] = field(default_factory=dict)  # task -> host:port
    generation: int = 0
    standby: tuple[str, ...] = ()


class PartitionGroupAssignor(AbstractPartitionAssignor):  # type: ignore[misc]
    """An aiokafka assignor instance bound to one application's layout and address.

    ``local_state`` reports, per task this instance has state for, the changelog offset
    sum that state covers; ``stateful`` names the sub-topologies whose tasks get
    ``standby_replicas`` standbys each."""

    name = "headrace-streams"
    version = 0

    def __init__(
        self,
        sources: Mapping[int, tuple[str, ...]],
        host: str,
        local_state: Callable[[], Mapping[str, int]] = dict,
        *,
        stateful: Collection[int] = (),
        standby_replicas: int = 0,
    ) -> None:
        self._sources = dict(sources)
        self.host = host
        self._local_state = local_state
        self._stateful = frozenset(stateful)
        self._replicas = standby_replicas
        self.view = AssignmentView()

    def metadata(self, topics: Iterable[str]) -> ConsumerProtocolMemberMetadata:
        info = {
            "host": self.host,
            "owned": list(self.view.tasks),
            "local": dict(self._local_state()),
        }
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
        stateful = [t for t in tasks if _task_key(t)[0] in self._stateful]
        standbys = (
            assign_standbys(stateful, placed, infos, self._replicas) if self._replicas else {}
        )
        hosts = {task: infos[m].host for m, owned in placed.items() for task in owned}
        log.info(
            "assigned %d tasks to %d members: %s%s",
            len(tasks),
            len(members),
            placed,
            f"; standbys {standbys}" if standbys else "",
        )
        out = {}
        for member, owned in placed.items():
            by_topic: dict[str, list[int]] = {}
            for task in owned:
                for topic, partition in tasks[task]:
                    by_topic.setdefault(topic, []).append(partition)
            user_data = json.dumps(
                {"tasks": owned, "standby": standbys.get(member, []), "hosts": hosts}
            ).encode()
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
            tuple(data.get("tasks", ())),
            dict(data.get("hosts", {})),
            self.view.generation + 1,
            tuple(data.get("standby", ())),
        )


def _decode(user_data: Any) -> MemberInfo:
    """A member's subscription data; ``local`` as a plain list of tasks (offset sums
    unknown) is what members of an earlier version send."""
    try:
        data = json.loads(user_data or b"{}")
        local = data.get("local", {})
        if not isinstance(local, dict):
            local = dict.fromkeys(local, 0)
        return MemberInfo(
            str(data.get("host", "")),
            tuple(data.get("owned", ())),
            {str(t): int(o) for t, o in local.items()},
        )
    except (ValueError, AttributeError, TypeError):
        return MemberInfo()
