"""``headrace users`` (SCRAM credentials) and ``headrace acls``, as Kafka's tools do them.

Online they ask a running broker with ``SecurityAdminClient``; ``users --data-dir``
edits a stopped broker's credentials file (``headrace.base.scram_credentials``).
"""

from __future__ import annotations

import argparse
from typing import Any

from ._acls import register as _register_acls
from ._users import register as _register_users


def register(subparsers: Any, broker_options: argparse.ArgumentParser) -> None:
    """``headrace users`` and ``headrace acls``."""
    _register_users(subparsers, broker_options)
    _register_acls(subparsers, broker_options)
