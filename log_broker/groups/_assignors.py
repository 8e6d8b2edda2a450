"""Server-side assignors of the consumer group protocol (KIP-848): ``uniform`` and
``range``, chosen by ``group.consumer.assignors`` (the first is the default) or by a
member's ``ServerAssignor``.

An assignor sees only the members' subscriptions (topic ids), their racks and the
group's previous target assignment; it returns the new target assignment. Moving a
partition between members is the reconciliation's business (revoke first, assign
after), not the assignor's.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

Partition = tuple[uuid.UUID, int]
Assignment = dict[str, frozenset[Partition]]


@dataclass(frozen=True, slots=True)
class TopicInfo:
    topic_id: uuid.UUID
    name: str
    partitions: int
    # Racks holding replicas of the topic's partitions (one broker: its rack, if set).
    racks: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class AssignorMember:
    member_id: str
    rack: str | None
    topics: frozenset[uuid.UUID]
    # The member's previous target, which the uniform assignor keeps where it can.
    current: frozenset[Partition]


def uniform(members: Sequence[AssignorMember], topics: Mapping[uuid.UUID, TopicInfo]) -> Assignment:
    """Spread partitions evenly, keep each where it was when that stays balanced, and
    prefer a member in a rack holding the partition among equally loaded ones.

    1. Quotas: a first greedy pass (partitions with the fewest candidates first, each
       to the least-loaded subscribed member) fixes how many partitions each member
       should hold; with identical subscriptions that is floor or ceil of the share.
    2. Stickiness: each member keeps partitions of its previous target, up to quota.
    3. The rest go to the subscribed member furthest below its quota, a rack match
       winning ties, then the member id.
    """
    candidates = _candidates(members, topics)
    by_id = {m.member_id: m for m in members}
    quota = dict.fromkeys(by_id, 0)

    def away(mid: str, partition: Partition) -> int:
        return 0 if by_id[mid].rack in topics[partition[0]].racks else 1

    for partition in sorted(candidates, key=lambda p: (len(candidates[p]), p)):
        best = min(candidates[partition], key=lambda mid: (quota[mid], away(mid, partition), mid))
        quota[best] += 1
    result: dict[str, set[Partition]] = {mid: set() for mid in by_id}
    owned: set[Partition] = set()
    for member in sorted(members, key=lambda m: m.member_id):
        for partition in sorted(member.current):
            keeps = member.member_id in candidates.get(partition, ())
            if (
                keeps
                and partition not in owned
                and len(result[member.member_id]) < quota[member.member_id]
            ):
                result[member.member_id].add(partition)
                owned.add(partition)
    for partition in sorted(p for p in candidates if p not in owned):
        best = min(
            candidates[partition],
            key=lambda mid: (len(result[mid]) - quota[mid], away(mid, partition), mid),
        )
        result[best].add(partition)
    return {mid: frozenset(ps) for mid, ps in result.items()}


def range_(members: Sequence[AssignorMember], topics: Mapping[uuid.UUID, TopicInfo]) -> Assignment:
    """Per topic, contiguous ranges of partitions to its subscribers in member-id
    order, the first ``partitions % subscribers`` getting one more: members subscribed
    to co-partitioned topics get the same partition numbers of each."""
    result: dict[str, set[Partition]] = {m.member_id: set() for m in members}
    for topic_id, info in sorted(topics.items(), key=lambda item: item[1].name):
        subscribers = sorted(m.member_id for m in members if topic_id in m.topics)
        if not subscribers:
            continue
        share, extra = divmod(info.partitions, len(subscribers))
        start = 0
        for index, member_id in enumerate(subscribers):
            count = share + (1 if index < extra else 0)
            result[member_id].update((topic_id, p) for p in range(start, start + count))
            start += count
    return {mid: frozenset(ps) for mid, ps in result.items()}


def _candidates(
    members: Sequence[AssignorMember], topics: Mapping[uuid.UUID, TopicInfo]
) -> dict[Partition, list[str]]:
    candidates: dict[Partition, list[str]] = {}
    for topic_id, info in topics.items():
        subscribers = [m.member_id for m in members if topic_id in m.topics]
        if subscribers:
            for p in range(info.partitions):
                candidates[(topic_id, p)] = subscribers
    return candidates


AssignorFn = Callable[[Sequence[AssignorMember], Mapping[uuid.UUID, TopicInfo]], Assignment]

ASSIGNORS: dict[str, AssignorFn] = {"uniform": uniform, "range": range_}
