"""The authorizer's decision, rule by rule (Kafka's StandardAuthorizer semantics)."""

from __future__ import annotations

from pathlib import Path

from headrace.log_broker.security import (
    AclBinding,
    AclFilter,
    Authorizer,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)

TOPIC = ResourceType.TOPIC
ALLOW, DENY = Permission.ALLOW, Permission.DENY


def acl(
    name: str,
    op: Operation,
    permission: Permission = ALLOW,
    pattern: PatternType = PatternType.LITERAL,
    principal: str = "User:alice",
    host: str = "*",
    rtype: ResourceType = TOPIC,
) -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, permission)


def authorizer(*bindings: AclBinding, **options: object) -> Authorizer:
    return Authorizer(None, bindings=list(bindings), **options)  # type: ignore[arg-type]


def test_literal_prefixed_and_wildcard_names() -> None:
    a = authorizer(
        acl("orders", Operation.READ),
        acl("logs-", Operation.READ, pattern=PatternType.PREFIXED),
        acl("*", Operation.WRITE),
    )
    assert a.authorize("User:alice", "h", Operation.READ, TOPIC, "orders")
    assert not a.authorize("User:alice", "h", Operation.READ, TOPIC, "orders2")
    assert a.authorize("User:alice", "h", Operation.READ, TOPIC, "logs-app")
    assert not a.authorize("User:alice", "h", Operation.READ, TOPIC, "log")
    assert a.authorize("User:alice", "h", Operation.WRITE, TOPIC, "anything")
    assert not a.authorize("User:bob", "h", Operation.READ, TOPIC, "orders")


def test_deny_wins_and_all_covers_every_operation() -> None:
    a = authorizer(acl("t", Operation.ALL), acl("t", Operation.WRITE, DENY))
    assert a.authorize("User:alice", "h", Operation.READ, TOPIC, "t")
    assert not a.authorize("User:alice", "h", Operation.WRITE, TOPIC, "t")
    denied_everywhere = authorizer(
        acl("t", Operation.READ), acl("", Operation.ALL, DENY, PatternType.PREFIXED)
    )
    assert not denied_everywhere.authorize("User:alice", "h", Operation.READ, TOPIC, "t")


def test_describe_is_implied_by_read_write_delete_alter() -> None:
    for op in (Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER):
        assert authorizer(acl("t", op)).authorize("User:alice", "h", Operation.DESCRIBE, TOPIC, "t")
    assert not authorizer(acl("t", Operation.CREATE)).authorize(
        "User:alice", "h", Operation.DESCRIBE, TOPIC, "t"
    )
    assert authorizer(acl("t", Operation.ALTER_CONFIGS)).authorize(
        "User:alice", "h", Operation.DESCRIBE_CONFIGS, TOPIC, "t"
    )


def test_hosts_wildcard_principals_super_users_and_no_acl_default() -> None:
    a = authorizer(
        acl("t", Operation.READ, host="10.0.0.1"),
        acl("u", Operation.READ, principal="User:*"),
        super_users=frozenset({"User:root"}),
    )
    assert a.authorize("User:alice", "10.0.0.1", Operation.READ, TOPIC, "t")
    assert not a.authorize("User:alice", "10.0.0.2", Operation.READ, TOPIC, "t")
    assert a.authorize("User:anyone", "h", Operation.READ, TOPIC, "u")
    assert a.authorize("User:root", "h", Operation.DELETE, TOPIC, "t")
    assert not a.authorize("User:alice", "h", Operation.READ, TOPIC, "no-acls")
    everyone = authorizer(acl("t", Operation.READ), allow_if_no_acl=True)
    assert everyone.authorize("User:bob", "h", Operation.READ, TOPIC, "no-acls")
    assert not everyone.authorize("User:bob", "h", Operation.READ, TOPIC, "t")


def test_bindings_persist_and_filters_select(tmp_path: Path) -> None:
    a = Authorizer.open(tmp_path)
    a.add(
        [
            acl("t", Operation.READ),
            acl("p-", Operation.WRITE, pattern=PatternType.PREFIXED),
            acl("g", Operation.READ, rtype=ResourceType.GROUP),
        ]
    )
    reopened = Authorizer.open(tmp_path)
    assert len(reopened.bindings()) == 3
    match = AclFilter(TOPIC, "p-x", PatternType.MATCH)
    assert [b.resource_name for b in reopened.bindings(match)] == ["p-"]
    assert len(reopened.bindings(AclFilter(resource_type=ResourceType.GROUP))) == 1
    removed = reopened.remove(AclFilter(TOPIC))
    assert len(removed) == 2
    assert [b.resource_type for b in Authorizer.open(tmp_path).bindings()] == [ResourceType.GROUP]


def test_any_resource_of_a_type() -> None:
    a = authorizer(
        acl("orders", Operation.WRITE),
        acl("logs-", Operation.WRITE, DENY, PatternType.PREFIXED),
        acl("logs-app", Operation.WRITE, principal="User:bob"),
    )
    assert a.authorize_any("User:alice", "h", Operation.WRITE, TOPIC)
    assert not a.authorize_any("User:alice", "h", Operation.READ, TOPIC)
    assert not authorizer(
        acl("logs-app", Operation.WRITE), acl("logs-", Operation.WRITE, DENY, PatternType.PREFIXED)
    ).authorize_any("User:alice", "h", Operation.WRITE, TOPIC)
    assert authorizer(allow_if_no_acl=True).authorize_any("User:x", "h", Operation.WRITE, TOPIC)
