"""``headrace acls add|list|remove`` with kafka-acls' flags, against a running broker.

    headrace acls add --allow-principal User:alice --operation Read --operation Write \\
        --topic orders --resource-pattern-type prefixed --command-config admin.properties

Each of ``--topic``, ``--group``, ``--transactional-id`` and ``--cluster`` names a
resource; a binding is made for every principal x host x operation x resource given.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
from typing import Any

from headrace.base.acls import (
    CLUSTER_NAME,
    AclBinding,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)
from headrace.base.table import render_table

from ._admin_client import SecurityAdminClient

_OPERATIONS = {
    op.name.replace("_", "").lower(): op
    for op in Operation
    if op not in (Operation.UNKNOWN, Operation.ANY)
}


def _operation(text: str) -> Operation:
    try:
        return _OPERATIONS[text.replace("_", "").replace("-", "").lower()]
    except KeyError:
        raise argparse.ArgumentTypeError(
            f"unknown operation {text!r} (one of {', '.join(sorted(_OPERATIONS))})"
        ) from None


def _resource_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--topic", action="append", default=[])
    parser.add_argument("--group", action="append", default=[])
    parser.add_argument("--transactional-id", action="append", default=[])
    parser.add_argument("--cluster", action="store_true")


def register(subparsers: Any, broker_options: argparse.ArgumentParser) -> None:
    acls = subparsers.add_parser("acls", help="access control lists (add, list, remove)")
    actions = acls.add_subparsers(dest="action", metavar="ACTION", required=True)
    for name, help_text in (("add", "add ACLs"), ("remove", "remove ACLs")):
        action = actions.add_parser(name, parents=[broker_options], help=help_text)
        _resource_options(action)
        action.add_argument("--allow-principal", action="append", default=[])
        action.add_argument("--deny-principal", action="append", default=[])
        action.add_argument("--allow-host", action="append", default=[])
        action.add_argument("--deny-host", action="append", default=[])
        action.add_argument("--operation", action="append", type=_operation, default=[])
        action.add_argument(
            "--resource-pattern-type", default="literal", choices=("literal", "prefixed")
        )
        action.set_defaults(handler=_add if name == "add" else _remove)
    listing = actions.add_parser("list", parents=[broker_options], help="list ACLs")
    _resource_options(listing)
    listing.add_argument("--principal")
    listing.add_argument(
        "--resource-pattern-type", default="any", choices=("any", "match", "literal", "prefixed")
    )
    listing.set_defaults(handler=_list)


def _resources(args: argparse.Namespace) -> list[tuple[ResourceType, str]]:
    resources = [(ResourceType.TOPIC, t) for t in args.topic]
    resources += [(ResourceType.GROUP, g) for g in args.group]
    resources += [(ResourceType.TRANSACTIONAL_ID, t) for t in args.transactional_id]
    if args.cluster:
        resources.append((ResourceType.CLUSTER, CLUSTER_NAME))
    return resources


def _bindings(args: argparse.Namespace) -> list[AclBinding]:
    resources = _resources(args)
    if not resources:
        raise ValueError("name a resource: --topic, --group, --transactional-id or --cluster")
    if not args.operation:
        raise ValueError("name at least one --operation")
    pattern = PatternType[args.resource_pattern_type.upper()]
    bindings = []
    for permission, principals, hosts in (
        (Permission.ALLOW, args.allow_principal, args.allow_host or ["*"]),
        (Permission.DENY, args.deny_principal, args.deny_host or ["*"]),
    ):
        for principal, host, operation, (rtype, name) in itertools.product(
            principals, hosts, args.operation, resources
        ):
            bindings.append(
                AclBinding(rtype, name, pattern, principal, host, operation, permission)
            )
    if not bindings:
        raise ValueError("name a principal: --allow-principal or --deny-principal")
    return bindings


def _add(args: argparse.Namespace) -> int:
    bindings = _bindings(args)
    for binding in bindings:
        binding.validate()
    asyncio.run(SecurityAdminClient.run(args, lambda client: client.create_acls(bindings)))
    print(f"added {len(bindings)} ACL(s)")
    return 0


def _remove(args: argparse.Namespace) -> int:
    filters = [
        AclFilter(
            b.resource_type,
            b.resource_name,
            b.pattern_type,
            b.principal,
            b.host,
            b.operation,
            b.permission,
        )
        for b in _bindings(args)
    ]

    async def remove(client: SecurityAdminClient) -> int:
        return sum([await client.delete_acls(f) for f in filters])

    removed = asyncio.run(SecurityAdminClient.run(args, remove))
    print(f"removed {removed} ACL(s)")
    return 0


def _list(args: argparse.Namespace) -> int:
    pattern = PatternType[args.resource_pattern_type.upper()]
    filters = [
        AclFilter(rtype, name, pattern, args.principal) for rtype, name in _resources(args)
    ] or [AclFilter(principal=args.principal)]

    async def describe(client: SecurityAdminClient) -> list[AclBinding]:
        found: list[AclBinding] = []
        for selected in filters:
            found += [b for b in await client.describe_acls(selected) if b not in found]
        return found

    bindings = asyncio.run(SecurityAdminClient.run(args, describe))
    rows = sorted(
        (
            b.resource_type.name,
            b.resource_name,
            b.pattern_type.name,
            b.principal,
            b.host,
            b.operation.name,
            b.permission.name,
        )
        for b in bindings
    )
    print(
        render_table(
            ("RESOURCE", "NAME", "PATTERN", "PRINCIPAL", "HOST", "OPERATION", "PERMISSION"), rows
        )
    )
    return 0
