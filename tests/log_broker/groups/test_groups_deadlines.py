from __future__ import annotations

from headrace.log_broker.groups._deadlines import Deadlines


def test_due_keys_come_out_earliest_first_and_only_once() -> None:
    d = Deadlines()
    d.set("b", 20)
    d.set("a", 10)
    d.set("c", 30)
    assert d.next() == 10
    assert d.pop_due(25) == ["a", "b"]
    assert d.pop_due(25) == []
    assert d.next() == 30 and len(d) == 1


def test_setting_again_replaces_and_cancel_removes() -> None:
    d = Deadlines()
    d.set("k", 10)
    d.set("k", 50)  # a heartbeat pushed the session deadline out
    assert d.get("k") == 50
    assert d.pop_due(40) == []
    d.set("x", 5)
    d.cancel("x")
    assert d.next() == 50
    assert d.pop_due(50) == ["k"]
    assert d.next() is None and len(d) == 0


def test_many_replacements_leave_one_live_entry() -> None:
    d = Deadlines()
    for at in range(1000):
        d.set(("session", "g", "m"), at)
    assert d.pop_due(10_000) == [("session", "g", "m")]
    assert d.next() is None
