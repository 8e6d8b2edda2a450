"""Record batches are a layer below the broker's storage: ``log_broker.records`` imports
nothing of storage or the server, its errors share the root handlers translate, and
storage re-exports them (it raises them too, for corrupt bytes on disk)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import headrace.log_broker.records as records
import headrace.log_broker.storage as storage
from headrace.base import BrokerError
from headrace.log_broker.records import _errors

RECORDS = Path(records.__file__).parent


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    """Each module a file of log_broker.records imports, resolved to an absolute name."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                base = node.module or ""
            else:  # relative to headrace.log_broker.records
                parts = ["headrace", "log_broker", "records"][: 4 - node.level]
                base = ".".join(parts + ([node.module] if node.module else []))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def test_records_import_nothing_of_storage_or_the_server() -> None:
    wrong = [
        f"{path.name}:{line} imports {name}"
        for path in sorted(RECORDS.glob("*.py"))
        for line, name in _imported_modules(path)
        if name.startswith("headrace.")
        and not name.startswith(("headrace.log_broker.records", "headrace.base"))
    ]
    assert wrong == []


def test_importing_records_loads_nothing_else_of_the_broker() -> None:
    # log_broker/__init__.py imports the whole broker, so the package stands empty here:
    # whatever else of log_broker gets loaded, records asked for it.
    program = (
        "import json, sys, types\n"
        "import headrace\n"
        "empty = types.ModuleType('headrace.log_broker')\n"
        f"empty.__path__ = [{str(RECORDS.parent)!r}]\n"
        "sys.modules['headrace.log_broker'] = empty\n"
        "from headrace.log_broker.records import _batches, _compression, _validation, _walk\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('headrace.log_broker.'))))\n"
    )
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout)
    assert "headrace.log_broker.records._walk" in loaded
    assert [m for m in loaded if not m.startswith("headrace.log_broker.records")] == []


def test_record_errors_carry_codes_and_storage_reexports_them() -> None:
    errors = [
        value
        for value in vars(_errors).values()
        if isinstance(value, type) and issubclass(value, records.RecordError)
    ]
    assert {error.__name__ for error in errors} == {
        "RecordError",
        "CorruptRecordError",
        "InvalidRecordError",
        "RecordTooLargeError",
    }
    for error in errors:
        assert getattr(records, error.__name__) is error
        assert getattr(storage, error.__name__) is error
        assert issubclass(error, BrokerError)
        assert not issubclass(error, storage.StorageError)
    assert (records.CorruptRecordError.error_code, records.CorruptRecordError.retriable) == (
        2,
        True,
    )
    assert records.InvalidRecordError.error_code == 87
    assert records.RecordTooLargeError.error_code == 10
