"""``headrace produce --value-format avro``: a record its schema does not take stops the
command at that line, as a line that is not JSON does, saying how many went before it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from clirun import headrace
from registryproc import broker_with_registry

SCHEMA = {
    "type": "record",
    "name": "Reading",
    "fields": [{"name": "sensor", "type": "string"}, {"name": "celsius", "type": "double"}],
}


@pytest.fixture(scope="module")
def avro(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    """The flags of an avro produce/consume against a broker with the registry inside."""
    folder = tmp_path_factory.mktemp("avro")
    schema = folder / "reading.avsc"
    schema.write_text(json.dumps(SCHEMA))
    with broker_with_registry(folder / "data") as (bootstrap, url):
        yield [
            "--bootstrap-servers", bootstrap, "--value-format", "avro",
            "--schema-registry-url", url, "--value-schema-file", str(schema),
        ]  # fmt: skip


def _lines(*readings: object) -> str:
    return "".join(json.dumps(r) + "\n" for r in readings)


def _read(capsys: pytest.CaptureFixture[str], topic: str, avro: list[str]) -> list[object]:
    flags = avro[: avro.index("--value-schema-file")]
    out = headrace(
        capsys, "consume", topic, *flags, "--from-beginning", "--until-end", "--no-progress"
    ).out
    return [json.loads(line) for line in out.splitlines()]


def test_a_record_the_schema_refuses_stops_at_its_line(
    capsys: pytest.CaptureFixture[str], avro: list[str], tmp_path: Path
) -> None:
    good = [{"sensor": f"s-{i}", "celsius": float(i)} for i in range(4)]
    lines = _lines(good[0], good[1], {"sensor": "s-2", "celsius": "warm"}, good[3])
    bad = headrace(capsys, "produce", "readings", *avro, stdin=lines, check=False)
    bad.one_line_error("line 3: avro(Reading): cannot serialize a dict: ")
    assert "; 2 record(s) before it were produced" in bad.err
    assert _read(capsys, "readings", avro) == good[:2]  # exactly what it said, no more
    # The line fixed, a rerun from it (tail -n +3) duplicates nothing.
    headrace(capsys, "produce", "readings", *avro, stdin=_lines(good[2], good[3]))
    assert _read(capsys, "readings", avro) == good

    missing = headrace(
        capsys, "produce", "readings", *avro, stdin=_lines(good[0], {"sensor": "x"}), check=False
    )
    missing.one_line_error("line 2: avro(Reading): cannot serialize a dict: no value and no")
    assert "1 record(s) before it were produced" in missing.err
    not_json = headrace(capsys, "produce", "readings", *avro, stdin="{oops\n", check=False)
    not_json.one_line_error("line 1: not a JSON value")
    assert "0 record(s) before it were produced" in not_json.err
    assert _read(capsys, "readings", avro) == [*good, good[0]]


def test_in_a_transaction_a_refused_record_commits_nothing(
    capsys: pytest.CaptureFixture[str], avro: list[str]
) -> None:
    lines = _lines({"sensor": "a", "celsius": 1.0}, ["not", "a", "record"])
    bad = headrace(
        capsys, "produce", "atomic", *avro, "--transactional-id", "t1", stdin=lines, check=False
    )
    bad.one_line_error("line 2: avro(Reading): cannot serialize a list")
    assert "nothing was committed" in bad.err
    assert _read(capsys, "atomic", avro) == []
