"""The client subcommands, in the order ``headrace --help`` lists them: topics, produce,
consume, groups, configs, records, users, acls."""

from __future__ import annotations

import argparse
from typing import Any

from ._configs import register as register_configs
from ._consume import register as register_consume
from ._produce import register as register_produce
from ._records import register as register_records
from ._topics import register as register_topics
from .groups import register as register_groups
from .security import register as register_security


def register(subparsers: Any, broker_options: argparse.ArgumentParser) -> None:
    for register_commands in (
        register_topics,
        register_produce,
        register_consume,
        register_groups,
        register_configs,
        register_records,
        register_security,
    ):
        register_commands(subparsers, broker_options)
