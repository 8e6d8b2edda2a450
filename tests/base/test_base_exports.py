"""base's public surface, and the rule that makes it the bottom: it imports nothing of ours."""

from __future__ import annotations

import ast
from pathlib import Path

from headrace import base

BASE = Path(__file__).resolve().parents[2] / "base"


def test_all_is_pinned() -> None:
    assert sorted(base.__all__) == [
        "BrokerError",
        "ClientSecurity",
        "ClientSecurityError",
        "Clock",
        "CoordinatorNotAvailableError",
        "IllegalTransitionError",
        "Lifecycle",
        "ManualClock",
        "PLAINTEXT",
        "SystemClock",
        "TopicPartition",
        "TransactionError",
        "TransitionTable",
        "check_transition",
        "fsync_dir",
        "parse_properties",
        "read_properties",
        "transition_table",
        "write_atomically",
    ]
    for name in base.__all__:
        assert getattr(base, name) is not None, name


def test_base_imports_no_other_package_of_ours() -> None:
    offenders = []
    for path in sorted(BASE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [("." * node.level) + node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            offenders += [
                f"{path.name}:{node.lineno} {name}"
                for name in names
                if name.startswith("..")
                or (name.startswith("headrace") and not name.startswith("headrace.base"))
            ]
    assert offenders == []
