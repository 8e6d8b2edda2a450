"""``headrace configs describe|alter``: topic and broker configs, as kafka-configs.sh.

Altering sends AlterConfigs with the resource's whole override set: the current
overrides (read with DescribeConfigs) with ``--add-config`` applied and
``--delete-config`` removed. That is what kafka-configs.sh did before
IncrementalAlterConfigs, and it is what aiokafka offers; two people altering the same
resource at once can lose one change, so the command reads again right before writing.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from typing import Any

from ._common import (
    UsageError,
    add_output_option,
    check,
    client_options,
    emit,
    key_value,
    run_client,
)

# DescribeConfigsResponse's ConfigSource, by the names people read.
SOURCES = {
    0: "unknown",
    1: "override",
    2: "dynamic-broker",
    3: "dynamic-default-broker",
    4: "static-broker",
    5: "default",
    6: "dynamic-logger",
}
# A comma outside brackets, as kafka-configs.sh splits --add-config.
_LIST_SEPARATOR = re.compile(r",(?=[^\]]*(?:\[|$))")
# The source that holds a resource's own overrides, by resource type (topic, broker).
OVERRIDE_SOURCE = {2: 1, 4: 2}


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str | None
    source: str
    sensitive: bool
    read_only: bool


async def open_admin(args: argparse.Namespace) -> Any:
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(**client_options(args))
    await admin.start()
    return admin


def _resource(resource_type: int, name: str, configs: dict[str, str] | None = None) -> Any:
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    return ConfigResource(ConfigResourceType(resource_type), name, configs)


async def describe_configs(admin: Any, resource_type: int, name: str) -> list[ConfigEntry]:
    """Every config of one resource (type 2: topic, 4: broker), sorted by name."""
    responses = await admin.describe_configs([_resource(resource_type, name)])
    entries = []
    for response in responses:
        for code, message, _type, _name, configs in response.resources:
            check(f"cannot describe configs of {name!r}", code, message)
            for entry in configs:
                value, read_only, source, sensitive = entry[1], entry[2], entry[3], entry[4]
                # v0 carries is_default (a bool) where v1+ carry config_source
                if isinstance(source, bool):
                    source_name = "default" if source else "override"
                else:
                    source_name = SOURCES.get(source, str(source))
                entries.append(
                    ConfigEntry(entry[0], value, source_name, bool(sensitive), bool(read_only))
                )
    return sorted(entries, key=lambda e: e.name)


async def alter_configs(
    admin: Any, resource_type: int, name: str, add: dict[str, str], delete: list[str]
) -> dict[str, str]:
    """Apply ``add`` and ``delete`` to the resource's overrides; returns the new set."""
    override = SOURCES[OVERRIDE_SOURCE[resource_type]]
    current = [
        e for e in await describe_configs(admin, resource_type, name) if e.source == override
    ]
    hidden = [e.name for e in current if e.value is None and e.name not in add]
    if hidden:
        raise RuntimeError(
            f"cannot keep the sensitive override(s) {', '.join(hidden)} "
            "(their values are not readable); give them with --add-config"
        )
    overrides = {e.name: e.value or "" for e in current}
    unknown = [k for k in delete if k not in overrides]
    if unknown:
        raise UsageError(f"--delete-config: {', '.join(unknown)} not overridden on {name!r}")
    for key in delete:
        overrides.pop(key)
    overrides.update(add)
    for response in await admin.alter_configs([_resource(resource_type, name, overrides)]):
        for code, message, *_ in response.resources:
            check(f"cannot alter configs of {name!r}", code, message)
    return overrides


def parse_config_list(items: list[str]) -> dict[str, str]:
    """``--add-config a=1,b=[x,y]`` (repeatable) as kafka-configs.sh takes it: pairs split
    at commas outside brackets, and a bracketed value is a list, given without them."""
    configs: dict[str, str] = {}
    for item in items:
        for part in _LIST_SEPARATOR.split(item):
            if part:
                try:
                    key, value = key_value(part)
                except argparse.ArgumentTypeError as exc:
                    raise UsageError(f"--add-config: {exc}") from None
                if value.startswith("[") and value.endswith("]"):
                    value = value[1:-1]
                configs[key] = value
    return configs


def config_keys(items: list[str]) -> list[str]:
    """``--delete-config a,b`` (repeatable): the keys, as kafka-configs.sh splits them."""
    return [key.strip() for item in items for key in item.split(",") if key.strip()]


def register(subparsers: Any, broker_options: argparse.ArgumentParser) -> None:
    configs = subparsers.add_parser("configs", help="describe and alter topic or broker configs")
    actions = configs.add_subparsers(dest="action", metavar="ACTION", required=True)
    describe = actions.add_parser(
        "describe",
        parents=[broker_options],
        help="every config of a topic or broker, with its source",
    )
    _add_entity(describe)
    add_output_option(describe)
    describe.set_defaults(handler=run_client(_describe))
    alter = actions.add_parser(
        "alter", parents=[broker_options], help="set or remove config overrides"
    )
    _add_entity(alter)
    alter.add_argument("--add-config", action="append", default=[], metavar="K=V[,K=V...]")
    alter.add_argument("--delete-config", action="append", default=[], metavar="KEY[,KEY...]")
    alter.set_defaults(handler=run_client(_alter))


def _add_entity(parser: argparse.ArgumentParser) -> None:
    entity = parser.add_mutually_exclusive_group(required=True)
    entity.add_argument("--topic", metavar="TOPIC")
    entity.add_argument(
        "--broker",
        nargs="?",
        const="",
        metavar="ID",
        help="a broker's configs (default: the first broker)",
    )


async def _entity(admin: Any, args: argparse.Namespace) -> tuple[int, str]:
    if args.topic is not None:
        return 2, args.topic
    if args.broker:
        return 4, args.broker
    brokers = (await admin.describe_cluster())["brokers"]
    return 4, str(min(b["node_id"] for b in brokers))


async def _describe(args: argparse.Namespace) -> int:
    admin = await open_admin(args)
    try:
        resource_type, name = await _entity(admin, args)
        entries = await describe_configs(admin, resource_type, name)
    finally:
        await admin.close()
    kind = "topic" if resource_type == 2 else "broker"
    emit(
        args,
        ("CONFIG", "VALUE", "SOURCE"),
        [(e.name, "(sensitive)" if e.sensitive else e.value, e.source) for e in entries],
        {
            kind: name,
            "configs": [
                {
                    "name": e.name,
                    "value": e.value,
                    "source": e.source,
                    "sensitive": e.sensitive,
                    "read_only": e.read_only,
                }
                for e in entries
            ],
        },
        title=f"Configs of {kind} {name}",
    )
    return 0


async def _alter(args: argparse.Namespace) -> int:
    add, delete = parse_config_list(args.add_config), config_keys(args.delete_config)
    if not add and not delete:
        raise UsageError("give --add-config and/or --delete-config")
    admin = await open_admin(args)
    try:
        resource_type, name = await _entity(admin, args)
        await alter_configs(admin, resource_type, name, add, delete)
    finally:
        await admin.close()
    kind = "topic" if resource_type == 2 else "broker"
    print(f"altered configs of {kind} {name}")
    return 0
