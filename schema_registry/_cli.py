"""``headrace schemas``: list, read, register, check and delete schemas in any
Confluent-compatible registry, over its HTTP API (this package's registry or another).

The registry is ``--schema-registry-url`` (default ``$HEADRACE_SCHEMA_REGISTRY_URL``, as
``produce`` and ``consume`` take it). Its errors reach the user as one line each: the
registry's own message (a subject not found, a schema incompatible and why), or the URL
that could not be reached. Registration here imports only argparse: the client is
imported when a subcommand runs.
"""

from __future__ import annotations

import argparse
import json
import os
import urllib.parse
from typing import Any

DEFAULT_REGISTRY = "http://127.0.0.1:8081"
SCHEMA_TYPES = ("AVRO", "JSON", "PROTOBUF")


def register(subparsers: Any, broker_options: argparse.ArgumentParser) -> None:
    registry = argparse.ArgumentParser(add_help=False)
    registry.add_argument(
        "--schema-registry-url",
        metavar="URL",
        default=os.environ.get("HEADRACE_SCHEMA_REGISTRY_URL", DEFAULT_REGISTRY),
        help="the registry (default $HEADRACE_SCHEMA_REGISTRY_URL or %(default)s)",
    )
    schemas = subparsers.add_parser(
        "schemas", help="list, get, register, check and delete schemas of a schema registry"
    )
    commands = schemas.add_subparsers(dest="schemas_command", metavar="SUBCOMMAND", required=True)

    listing = commands.add_parser("list", parents=[registry], help="the registry's subjects")
    listing.set_defaults(handler=_list)

    get = commands.add_parser("get", parents=[registry], help="a version of a subject's schema")
    get.add_argument("subject")
    get.add_argument("--version", default="latest", metavar="N|latest")
    get.set_defaults(handler=_get)

    add = commands.add_parser(
        "register", parents=[registry], help="register a schema under a subject; prints its id"
    )
    add.add_argument("subject")
    add.add_argument("--schema", required=True, metavar="FILE")
    add.add_argument("--type", choices=SCHEMA_TYPES, default="AVRO", dest="schema_type")
    add.set_defaults(handler=_register)

    check = commands.add_parser(
        "compatibility",
        parents=[registry],
        help="whether a schema is compatible with a subject (exit 1 if not)",
    )
    check.add_argument("subject")
    check.add_argument("--schema", required=True, metavar="FILE")
    check.add_argument("--type", choices=SCHEMA_TYPES, default="AVRO", dest="schema_type")
    check.add_argument(
        "--version",
        metavar="N|latest",
        help="check against this version only (default: the versions the subject's"
        " compatibility level names)",
    )
    check.set_defaults(handler=_compatibility)

    delete = commands.add_parser(
        "delete", parents=[registry], help="delete a subject or one version of it"
    )
    delete.add_argument("subject")
    delete.add_argument("--version", metavar="N|latest")
    delete.add_argument(
        "--permanent", action="store_true", help="hard-delete what was soft-deleted before"
    )
    delete.set_defaults(handler=_delete)


def _client(args: argparse.Namespace) -> Any:
    from ._client import RegistryClient

    return RegistryClient(args.schema_registry_url)


def _subject(name: str) -> str:
    return "/subjects/" + urllib.parse.quote(name, safe="")


def _schema_body(args: argparse.Namespace) -> dict[str, str]:
    with open(args.schema) as file:
        body = {"schema": file.read()}
    if args.schema_type != "AVRO":
        body["schemaType"] = args.schema_type
    return body


def _list(args: argparse.Namespace) -> int:
    for subject in _client(args).request("GET", "/subjects"):
        print(subject)
    return 0


def _get(args: argparse.Namespace) -> int:
    answer = _client(args).request("GET", f"{_subject(args.subject)}/versions/{args.version}")
    print(json.dumps(answer, indent=2))
    return 0


def _register(args: argparse.Namespace) -> int:
    answer = _client(args).request("POST", f"{_subject(args.subject)}/versions", _schema_body(args))
    print(answer["id"])
    return 0


def _compatibility(args: argparse.Namespace) -> int:
    versions = "versions" if args.version is None else f"versions/{args.version}"
    answer = _client(args).request(
        "POST",
        f"/compatibility{_subject(args.subject)}/{versions}?verbose=true",
        _schema_body(args),
    )
    if answer.get("is_compatible"):
        print("compatible")
        return 0
    reasons = "; ".join(str(m) for m in answer.get("messages") or [])
    print(f"incompatible: {reasons}" if reasons else "incompatible")
    return 1


def _delete(args: argparse.Namespace) -> int:
    path = _subject(args.subject)
    if args.version is not None:
        path += f"/versions/{args.version}"
    if args.permanent:
        path += "?permanent=true"
    answer = _client(args).request("DELETE", path)
    for version in answer if isinstance(answer, list) else [answer]:
        print(version)
    return 0
