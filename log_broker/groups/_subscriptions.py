"""The topics a group reads, as OffsetDelete must know them (KIP-496): the offsets of a
topic the group is subscribed to stay, since a member would commit them again.

A classic group of the consumer protocol names them in each member's Subscription
(``ConsumerProtocolSubscription``: a version, then the topics, in every version); a
classic group of any other protocol keeps them to itself.
"""

from __future__ import annotations

import struct

from ._group import Group

CONSUMER_PROTOCOL_TYPE = "consumer"

_VERSION_AND_COUNT = struct.Struct(">hi")
_LENGTH = struct.Struct(">h")


def subscription_topics(metadata: bytes) -> frozenset[str] | None:
    """The topics of one serialized Subscription, or None when it does not parse."""
    try:
        _, count = _VERSION_AND_COUNT.unpack_from(metadata, 0)
        pos = _VERSION_AND_COUNT.size
        topics = []
        for _ in range(max(count, 0)):
            (length,) = _LENGTH.unpack_from(metadata, pos)
            pos += _LENGTH.size
            if length < 0 or pos + length > len(metadata):
                return None
            topics.append(metadata[pos : pos + length].decode("utf-8"))
            pos += length
    except (struct.error, UnicodeDecodeError):
        return None
    return frozenset(topics)


def classic_subscribed_topics(group: Group) -> frozenset[str]:
    """The union of the members' subscriptions for the group's chosen protocol; none
    for a group of another protocol type, with no protocol chosen yet, or whose
    subscriptions do not parse (as Kafka's ``ClassicGroup.computeSubscribedTopics``)."""
    if group.protocol_type != CONSUMER_PROTOCOL_TYPE or not group.protocol:
        return frozenset()
    found: set[str] = set()
    for member in group.members.values():
        topics = subscription_topics(member.metadata_for(group.protocol))
        if topics is None:
            return frozenset()
        found |= topics
    return frozenset(found)
