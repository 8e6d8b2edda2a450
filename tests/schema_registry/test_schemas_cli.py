"""``headrace schemas`` against a real registry (a broker process with the registry
inside): each subcommand as a user types it, and its errors as one line."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from clirun import headrace


def _avro(tmp_path: Path, name: str, fields: Sequence[object]) -> str:
    path = tmp_path / f"{name}.avsc"
    path.write_text(json.dumps({"type": "record", "name": "Order", "fields": fields}))
    return str(path)


V1: list[object] = [{"name": "id", "type": "string"}]
V2: list[object] = [
    *V1,
    {"name": "qty", "type": "int", "default": 0},
]  # BACKWARD compatible with V1
BAD: list[object] = [{"name": "id", "type": "int"}]  # string to int: not


def test_register_list_get_check_and_delete(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, registry_url: str
) -> None:
    url = ("--schema-registry-url", registry_url)
    subject = "cli-orders-value"
    first = headrace(
        capsys, "schemas", "register", subject, "--schema", _avro(tmp_path, "v1", V1), *url
    )
    schema_id = int(first.out)
    assert subject in headrace(capsys, "schemas", "list", *url).out.split()

    latest = json.loads(headrace(capsys, "schemas", "get", subject, *url).out)
    assert (latest["subject"], latest["version"], latest["id"]) == (subject, 1, schema_id)
    assert json.loads(latest["schema"])["fields"] == V1
    assert (
        json.loads(headrace(capsys, "schemas", "get", subject, "--version", "1", *url).out)
        == latest
    )

    v2 = _avro(tmp_path, "v2", V2)
    assert (
        headrace(capsys, "schemas", "compatibility", subject, "--schema", v2, *url).out
        == "compatible\n"
    )
    bad = _avro(tmp_path, "bad", BAD)
    refused = headrace(
        capsys,
        "schemas",
        "compatibility",
        subject,
        "--schema",
        bad,
        "--version",
        "1",
        *url,
        check=False,
    )
    assert refused.code == 1
    assert refused.out.startswith("incompatible: /id: type string cannot be read as int")

    headrace(
        capsys, "schemas", "register", subject, "--schema", bad, *url, check=False
    ).one_line_error("incompatible with an earlier schema")
    assert (
        int(headrace(capsys, "schemas", "register", subject, "--schema", v2, *url).out) != schema_id
    )

    assert headrace(capsys, "schemas", "delete", subject, "--version", "1", *url).out == "1\n"
    assert headrace(capsys, "schemas", "delete", subject, *url).out == "2\n"
    assert subject not in headrace(capsys, "schemas", "list", *url).out.split()
    hard = headrace(capsys, "schemas", "delete", subject, "--permanent", *url)
    assert hard.out == "1\n2\n"  # a hard delete removes the soft-deleted versions
    headrace(capsys, "schemas", "get", subject, *url, check=False).one_line_error("not found")


def test_json_schemas_and_the_url_from_the_environment(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    registry_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HEADRACE_SCHEMA_REGISTRY_URL", registry_url)
    schema = tmp_path / "point.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"x": {"type": "number"}}}))
    headrace(
        capsys, "schemas", "register", "cli-points-value", "--schema", str(schema), "--type", "JSON"
    )
    answer = json.loads(headrace(capsys, "schemas", "get", "cli-points-value").out)
    assert answer["schemaType"] == "JSON"


def test_errors_are_one_line(capsys: pytest.CaptureFixture[str], registry_url: str) -> None:
    url = ("--schema-registry-url", registry_url)
    headrace(capsys, "schemas", "get", "cli-no-such-subject", *url, check=False).one_line_error(
        "not found"
    )
    headrace(
        capsys, "schemas", "list", "--schema-registry-url", "http://127.0.0.1:9", check=False
    ).one_line_error("unreachable")
