"""Share sessions (KIP-932): which partitions a member fetches, and the epoch that orders
its ShareFetch and ShareAcknowledge requests.

A session is keyed by (group, member). Epoch 0 opens it (replacing any older one of the
same member), -1 closes it, and every other request must carry the session's next epoch,
which then moves on by one (after 2**31-1 comes 1), whether the request was a fetch or
an acknowledgement. The request's epoch is checked and the session moved on before the
request does anything else, so requests of one session are ordered by arrival.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ._errors import (
    InvalidShareSessionEpochError,
    ShareSessionLimitError,
    ShareSessionNotFoundError,
)

OPEN_EPOCH = 0
CLOSE_EPOCH = -1
_MAX_EPOCH = 2**31 - 1

# (topic id as text is not needed: partitions are named by topic name inside the broker)
TopicPartition = tuple[str, int]


@dataclass(slots=True)
class ShareSession:
    group_id: str
    member_id: str
    next_epoch: int = 1
    partitions: set[TopicPartition] = field(default_factory=set)


class ShareSessions:
    def __init__(self, max_sessions: int) -> None:
        self.max_sessions = max_sessions
        self._sessions: dict[tuple[str, str], ShareSession] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def begin(self, group_id: str, member_id: str, epoch: int) -> ShareSession:
        """The session a request with ``epoch`` belongs to, its epoch moved on.

        A closing request (-1) gets the session it closes; the caller ends it with
        ``close`` once its acknowledgements are applied.
        """
        key = (group_id, member_id)
        if epoch == OPEN_EPOCH:
            if key not in self._sessions and len(self._sessions) >= self.max_sessions:
                raise ShareSessionLimitError(
                    f"{self.max_sessions} share sessions are open (group.share.max.share.sessions)"
                )
            session = ShareSession(group_id, member_id)
            self._sessions[key] = session
            return session
        found = self._sessions.get(key)
        if found is None:
            raise ShareSessionNotFoundError(f"no share session for member {member_id}")
        if epoch == CLOSE_EPOCH:
            return found
        session = found
        if epoch != session.next_epoch:
            raise InvalidShareSessionEpochError(
                f"share session epoch {epoch}, expected {session.next_epoch}"
            )
        session.next_epoch = 1 if epoch == _MAX_EPOCH else epoch + 1
        return session

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.get((group_id, member_id))

    def close(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.pop((group_id, member_id), None)

    def of_group(self, group_id: str) -> list[ShareSession]:
        return [s for (g, _), s in self._sessions.items() if g == group_id]
