import subprocess
import sys
from pathlib import Path
from typing import Any

from headrace.dsl import Serdes
from headrace.examples.tire_pressure import (
    ALERTS,
    READINGS,
    SAMPLE,
    STATUS_STORE,
    T0,
    build_topology,
)
from headrace.streams.testing import TestRecord, TopologyTestDriver

MINUTE = 60_000


def run(records: list[TestRecord]) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, str]]:
    with TopologyTestDriver(build_topology(), {"application_id": "tires"}) as driver:
        driver.create_input_topic(READINGS, Serdes.string(), Serdes.json()).pipe_records(records)
        alerts = [
            tuple(kv)
            for kv in driver.create_output_topic(
                ALERTS, Serdes.string(), Serdes.json()
            ).read_key_values_to_list()
        ]
        status = {
            tire: state["status"] for tire, state in driver.get_key_value_store(STATUS_STORE).all()
        }
    return alerts, status


def readings(tire: str, points: list[tuple[int, float]]) -> list[TestRecord]:
    return [TestRecord(tire, {"ts": T0 + t, "psi": psi}) for t, psi in points]


def test_the_sample_has_one_slow_leak_and_one_blowout() -> None:
    alerts, status = run(SAMPLE)
    assert [(tire, a["status"], a["psi"]) for tire, a in alerts] == [
        ("truck-7/front-left", "slow-leak", 41.0),
        ("truck-7/rear-right", "blowout", 20.0),
    ]
    assert status == {"truck-7/front-left": "slow-leak", "truck-7/rear-right": "blowout"}


def test_45_to_41_over_15_minutes_is_a_slow_leak_but_not_over_20_minutes() -> None:
    slow = readings("t", [(0, 45.0), (5 * MINUTE, 44.0), (10 * MINUTE, 42.5), (15 * MINUTE, 41.0)])
    slower = readings("t", [(0, 45.0), (10 * MINUTE, 43.0), (20 * MINUTE, 41.0)])
    assert [a["status"] for _t, a in run(slow)[0]] == ["slow-leak"]
    assert run(slower)[0] == []  # never 4 psi below a reading of the last 15 minutes


def test_45_to_20_in_10_seconds_is_a_blowout_and_20_over_minutes_is_a_leak() -> None:
    blowout = readings("t", [(0, 45.0), (10_000, 20.0)])
    fast_leak = readings("t", [(0, 45.0), (MINUTE, 43.0), (2 * MINUTE, 20.0)])
    assert [a["status"] for _t, a in run(blowout)[0]] == ["blowout"]
    assert [a["status"] for _t, a in run(fast_leak)[0]] == ["slow-leak"]


def test_a_tire_pumped_back_up_recovers() -> None:
    records = readings("t", [(0, 45.0), (MINUTE, 40.0), (2 * MINUTE, 40.0), (3 * MINUTE, 45.0)])
    alerts, status = run(records)
    assert [a["status"] for _t, a in alerts] == ["slow-leak", "ok"]
    assert status == {"t": "ok"}


def test_the_example_runs_as_a_program() -> None:
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-m", "headrace.examples.tire_pressure"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "truck-7/rear-right blowout at 20.0 psi" in result.stdout
