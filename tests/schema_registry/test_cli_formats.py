"""``headrace produce``/``consume`` with ``--value-format``: JSON lines in, registry
wire format on the topic (read back by headrace's serdes), decoded JSON out."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

AVRO = {
    "type": "record",
    "name": "Reading",
    "fields": [{"name": "sensor", "type": "string"}, {"name": "celsius", "type": "double"}],
}
PROTO = 'syntax = "proto3";\nmessage Reading { string sensor = 1; double celsius = 2; }\n'
JSON_SCHEMA = {
    "type": "object",
    "properties": {"sensor": {"type": "string"}, "celsius": {"type": "number"}},
}
LINES = [{"sensor": "s-1", "celsius": 21.5}, {"sensor": "s-2", "celsius": -3.0}]


def headrace(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "headrace", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("fmt", "schema", "suffix"),
    [
        ("avro", json.dumps(AVRO), ".avsc"),
        ("protobuf", PROTO, ".proto"),
        ("json-schema", json.dumps(JSON_SCHEMA), ".json"),
    ],
)
def test_produce_and_consume_through_the_registry(
    registry_broker: tuple[str, str], tmp_path: Path, fmt: str, schema: str, suffix: str
) -> None:
    bootstrap, url = registry_broker
    topic = f"readings-{fmt}"
    schema_file = tmp_path / f"reading{suffix}"
    schema_file.write_text(schema)
    common = ["--bootstrap-servers", bootstrap, "--value-format", fmt, "--schema-registry-url", url]
    produced = headrace(
        "produce",
        topic,
        *common,
        "--value-schema-file",
        str(schema_file),
        stdin="".join(json.dumps(line) + "\n" for line in LINES),
    )
    assert produced.returncode == 0, produced.stderr
    consumed = headrace(
        "consume",
        topic,
        *common,
        "--from-beginning",
        "--max-messages",
        "2",
        "--timeout-ms",
        "10000",
    )
    assert consumed.returncode == 0, consumed.stderr
    assert [json.loads(line) for line in consumed.stdout.splitlines()] == LINES
    # On the topic the values are in the registry's format: the magic byte leads.
    raw = headrace(
        "consume",
        topic,
        "--bootstrap-servers",
        bootstrap,
        "--from-beginning",
        "--max-messages",
        "1",
        "--timeout-ms",
        "10000",
    )
    assert raw.returncode == 0 and raw.stdout.startswith("\x00"), raw


def test_bad_input_is_one_clear_line(registry_broker: tuple[str, str], tmp_path: Path) -> None:
    bootstrap, url = registry_broker
    schema_file = tmp_path / "reading.avsc"
    schema_file.write_text(json.dumps(AVRO))
    result = headrace(
        "produce",
        "readings-bad",
        "--bootstrap-servers",
        bootstrap,
        "--value-format",
        "avro",
        "--schema-registry-url",
        url,
        "--value-schema-file",
        str(schema_file),
        stdin='{"sensor": 5}\n',
    )
    assert result.returncode == 1
    assert result.stderr.startswith("headrace produce: error:"), result.stderr
    missing = headrace(
        "produce",
        "readings-bad",
        "--bootstrap-servers",
        bootstrap,
        "--value-format",
        "avro",
        "--schema-registry-url",
        url,
    )
    assert "needs --value-schema-file" in missing.stderr


@pytest.mark.parametrize("command", ["produce", "consume"])
def test_registry_formats_are_offered_for_values_only(command: str) -> None:
    from headrace.cli import build_parser

    parser = build_parser()
    for fmt in ("avro", "protobuf", "json-schema"):
        parser.parse_args([command, "t", "--value-format", fmt])
        with pytest.raises(SystemExit):
            parser.parse_args([command, "t", "--key-format", fmt])
    # Building the parser again offers each format once.
    again = build_parser().parse_args([command, "t", "--value-format", "avro"])
    assert again.value_format == "avro"
