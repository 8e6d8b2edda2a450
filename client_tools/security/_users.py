"""``headrace users add|list|delete``: SCRAM credentials.

With ``--data-dir`` the command edits the broker's credential file directly, to create
the first admin before the broker starts (as ``kafka-storage format --add-scram``
does); run it while that broker is stopped, since a running broker keeps its own copy.
Without it, the command talks to a running broker (Describe/AlterUserScramCredentials)
through ``--bootstrap-servers`` and ``--command-config``. Passwords come from standard
input only, never from the command line where ``ps`` would show them.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import sys
from pathlib import Path
from typing import Any

from headrace.base.scram import DEFAULT_ITERATIONS, ScramMechanism, salted_password
from headrace.base.scram_credentials import CredentialStore
from headrace.base.table import render_table


def register(subparsers: Any, broker_options: argparse.ArgumentParser) -> None:
    users = subparsers.add_parser("users", help="SCRAM users of the broker (add, list, delete)")
    actions = users.add_subparsers(dest="action", metavar="ACTION", required=True)
    add = actions.add_parser(
        "add", parents=[broker_options], help="add a user or change its password"
    )
    add.add_argument("name")
    add.add_argument(
        "--password-stdin",
        action="store_true",
        required=True,
        help="read the password from the first line of standard input",
    )
    add.add_argument(
        "--mechanism",
        action="append",
        choices=[m.kafka_name for m in ScramMechanism],
        help="SCRAM mechanism (repeatable; default both)",
    )
    add.add_argument("--iterations", type=int, default=DEFAULT_ITERATIONS)
    add.add_argument("--data-dir", help="edit this stopped broker's data dir directly")
    add.set_defaults(handler=_add)
    listing = actions.add_parser("list", parents=[broker_options], help="list users")
    listing.add_argument("--data-dir", help="read this broker's data dir directly")
    listing.set_defaults(handler=_list)
    delete = actions.add_parser("delete", parents=[broker_options], help="delete a user")
    delete.add_argument("name")
    delete.add_argument(
        "--mechanism", action="append", choices=[m.kafka_name for m in ScramMechanism]
    )
    delete.add_argument("--data-dir", help="edit this stopped broker's data dir directly")
    delete.set_defaults(handler=_delete)


def _mechanisms(args: argparse.Namespace) -> list[ScramMechanism]:
    return [
        ScramMechanism.named(m) for m in (args.mechanism or [m.kafka_name for m in ScramMechanism])
    ]


def _password() -> str:
    password = sys.stdin.readline().rstrip("\r\n")
    if not password:
        raise ValueError("no password on standard input")
    return password


def _add(args: argparse.Namespace) -> int:
    password = _password()
    if args.data_dir:
        store = CredentialStore.open(Path(args.data_dir))
        for mechanism in _mechanisms(args):
            store.set_password(args.name, mechanism, password, args.iterations)
    else:
        from ._admin_client import SecurityAdminClient

        upserts = []
        for mechanism in _mechanisms(args):
            salt = secrets.token_bytes(32)
            upserts.append(
                (
                    mechanism,
                    args.iterations,
                    salt,
                    salted_password(mechanism, password, salt, args.iterations),
                )
            )
        asyncio.run(
            SecurityAdminClient.run(args, lambda client: client.alter_scram(args.name, upserts, []))
        )
    print(f"user {args.name}: {', '.join(m.kafka_name for m in _mechanisms(args))}")
    return 0


def _list(args: argparse.Namespace) -> int:
    if args.data_dir:
        users = {
            user: [(m.kafka_name, i) for m, i in mechs]
            for user, mechs in CredentialStore.open(Path(args.data_dir)).users().items()
        }
    else:
        from ._admin_client import SecurityAdminClient

        users = asyncio.run(SecurityAdminClient.run(args, lambda c: c.describe_scram()))
    rows = [
        (user, mechanism, iterations)
        for user, mechs in sorted(users.items())
        for mechanism, iterations in mechs
    ]
    print(render_table(("USER", "MECHANISM", "ITERATIONS"), rows))
    return 0


def _delete(args: argparse.Namespace) -> int:
    if args.data_dir:
        store = CredentialStore.open(Path(args.data_dir))
        if args.mechanism:
            found = [store.delete(args.name, m) for m in _mechanisms(args)]
        else:
            found = [store.delete(args.name)]
        if not any(found):
            raise RuntimeError(f"no user {args.name!r}")
    else:
        from ._admin_client import SecurityAdminClient

        async def delete(client: SecurityAdminClient) -> None:
            held = [
                ScramMechanism.named(m)
                for m, _ in (await client.describe_scram()).get(args.name, [])
            ]
            # Without --mechanism: every mechanism the user has (asking to delete one it
            # lacks would fail the whole request for that user).
            wanted = _mechanisms(args) if args.mechanism else held
            if not held or not wanted:
                raise RuntimeError(f"no user {args.name!r}")
            await client.alter_scram(args.name, [], wanted)

        asyncio.run(SecurityAdminClient.run(args, delete))
    print(f"deleted user {args.name}")
    return 0
