"""A coordinator on a manual clock, with writes completed by hand: no sockets, no files."""

from __future__ import annotations

import itertools
from typing import Any

from headrace.log_broker.groups import (
    GroupConfig,
    GroupCoordinator,
    GroupError,
    JoinRequest,
    JoinResult,
    ManualClock,
    MemberIdRequiredError,
    NewOffset,
    Reply,
    TopicPartition,
    Write,
)

PROTOCOLS = (("range", b"range-meta"), ("roundrobin", b"rr-meta"))


class Harness:
    def __init__(self, *, auto_flush: bool = True, **config: Any) -> None:
        self.clock = ManualClock()
        ids = itertools.count(1)
        settings = {"initial_rebalance_delay_ms": 0, **config}
        self.coordinator = GroupCoordinator(
            GroupConfig(**settings),
            self.clock,
            new_member_id=lambda prefix: f"{prefix}-{next(ids)}",
        )
        self.auto_flush = auto_flush
        self.records: list[tuple[bytes, bytes | None]] = []
        self.held: list[Write] = []

    # ---------------------------------------------------------------- writes

    def flush(self, error: GroupError | None = None) -> list[Write]:
        """Complete every queued write (durable, or failed with ``error``)."""
        done: list[Write] = []
        while writes := self.held + self.coordinator.take_writes():
            self.held = []
            for write in writes:
                if error is None:
                    self.records.extend(write.records)
                self.coordinator.write_done(write, error)
                done.append(write)
        return done

    def hold(self) -> list[Write]:
        """Take queued writes without completing them yet."""
        self.held += self.coordinator.take_writes()
        return self.held

    def _settle(self) -> None:
        if self.auto_flush:
            self.flush()

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)
        self.coordinator.tick()
        self._settle()

    # ---------------------------------------------------------------- requests

    def join(
        self,
        group: str = "g",
        member_id: str = "",
        *,
        client: str = "c",
        protocols: tuple[tuple[str, bytes], ...] = PROTOCOLS,
        session_ms: int = 10_000,
        rebalance_ms: int = 30_000,
        instance: str | None = None,
        protocol_type: str = "consumer",
        require_id: bool = True,
    ) -> Reply[JoinResult]:
        reply = self.coordinator.join(
            JoinRequest(
                group,
                member_id,
                instance,
                client,
                "/127.0.0.1",
                session_ms,
                rebalance_ms,
                protocol_type,
                protocols,
                require_id,
            )
        )
        self._settle()
        return reply

    def new_member(self, group: str = "g", **kwargs: Any) -> tuple[str, Reply[JoinResult]]:
        """Join as Kafka 2.2+ clients do: get an id first, then join with it."""
        member_id = self.member_id(group, **kwargs)
        return member_id, self.join(group, member_id, **kwargs)

    def sync(
        self,
        group: str,
        generation: int,
        member_id: str,
        assignments: dict[str, bytes] | None = None,
        instance: str | None = None,
    ) -> Reply[bytes]:
        reply = self.coordinator.sync(group, generation, member_id, instance, assignments or {})
        self._settle()
        return reply

    def commit(
        self, group: str, generation: int, member_id: str, offsets: dict[TopicPartition, NewOffset]
    ) -> Reply[None]:
        reply = self.coordinator.commit(group, generation, member_id, None, offsets)
        self._settle()
        return reply

    def txn_commit(
        self,
        group: str,
        generation: int,
        member_id: str,
        offsets: dict[TopicPartition, NewOffset],
        *,
        producer_id: int = 7,
        instance: str | None = None,
    ) -> Reply[None]:
        """A TxnOffsetCommit of producer ``producer_id`` carrying this group metadata."""
        reply = self.coordinator.txn_commit(
            group,
            producer_id,
            0,
            offsets,
            generation=generation,
            member_id=member_id,
            group_instance_id=instance,
        )
        self._settle()
        return reply

    def delete(self, group: str) -> Reply[None]:
        reply = self.coordinator.delete(group)
        self._settle()
        return reply

    def heartbeat(
        self, group: str, generation: int, member_id: str, instance: str | None = None
    ) -> GroupError | None:
        try:
            self.coordinator.heartbeat(group, generation, member_id, instance)
        except GroupError as exc:
            return exc
        finally:
            self._settle()
        return None

    def member_id(self, group: str = "g", **kwargs: Any) -> str:
        """The id a first JoinGroup (without one) is told to rejoin with."""
        first = self.join(group, **kwargs)
        assert first.done
        try:
            first.result()
        except MemberIdRequiredError as exc:
            return exc.member_id
        raise AssertionError("a first join without member id must ask for one")

    def form_group(self, count: int, group: str = "g", **kwargs: Any) -> tuple[int, list[str]]:
        """``count`` members start together and reach Stable; returns (generation, ids).

        Each first gets its id; the join phase then waits for every one of them.
        """
        ids = [self.member_id(group, **kwargs) for _ in range(count)]
        replies = [self.join(group, m, **kwargs) for m in ids]
        assert all(r.done for r in replies), replies
        results = [r.result() for r in replies]
        generation, leader = results[0].generation, results[0].leader
        assignments = {m: f"assigned-{m}".encode() for m in ids}
        syncs = [self.sync(group, generation, m, assignments if m == leader else None) for m in ids]
        assert all(s.done for s in syncs), syncs
        return generation, ids
