import subprocess
import sys
from pathlib import Path

from headrace.dsl import Serdes
from headrace.examples.iot_sensors import (
    ALERTS,
    DEAD_LETTERS,
    ENRICHED,
    READINGS,
    SAMPLE,
    EnrichedReading,
    build_topology,
)
from headrace.streams.testing import TopologyTestDriver


def test_readings_are_validated_filtered_enriched_and_routed() -> None:
    with TopologyTestDriver(build_topology(), {"application_id": "iot"}) as driver:
        driver.create_input_topic(READINGS, Serdes.string(), Serdes.bytes()).pipe_records(SAMPLE)
        out = Serdes.model(EnrichedReading)
        enriched = driver.create_output_topic(
            ENRICHED, Serdes.string(), out
        ).read_key_values_to_list()
        alerts = driver.create_output_topic(ALERTS, Serdes.string(), out).read_key_values_to_list()
        dead = driver.create_output_topic(DEAD_LETTERS).read_records_to_list()
    assert [k for k, _ in enriched] == ["s-1", "s-2", "s-4"]  # s-3 implausible, one invalid
    first = enriched[0][1]
    assert (first.site, first.fahrenheit) == ("greenhouse", 76.1)
    assert enriched[2][1].site == "unknown"
    assert [(k, v.celsius) for k, v in alerts] == [("s-2", 9.5)]  # above cold-store's 8 C
    assert [r.value for r in dead] == [SAMPLE[3][1]]
    assert b"celsius" in dict(dead[0].headers)["__streams.errors.message"]


def test_the_example_runs_as_a_program() -> None:
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-m", "headrace.examples.iot_sensors"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "sensor-alerts: s-2" in result.stdout
    assert "sensor-readings-dlq" in result.stdout
    assert "Sub-topology: 0" in result.stdout
