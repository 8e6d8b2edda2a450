"""Filtering and enriching IoT sensor readings: a stateless streams application.

Readings arrive as JSON on ``sensor-readings``, keyed by sensor id. The topology

1. drops readings that fail validation (they go to ``sensor-readings-dlq`` with the
   reason in headers, never silently lost),
2. drops physically impossible values (a broken probe),
3. enriches each reading with the sensor's site and the temperature in Fahrenheit,
4. sends readings above the site's alert threshold to ``sensor-alerts`` and all
   enriched readings to ``sensor-enriched``.

Run it with ``python -m headrace.examples.iot_sensors``: it pipes a few sample readings through the
test driver and prints what comes out. The same ``build_topology()`` runs unchanged
under the streams runtime against a broker.
"""

from __future__ import annotations

import pydantic

from headrace import Serdes, StreamsBuilder, Topology
from headrace.streams import DeadLetterQueueHandler
from headrace.testing import TopologyTestDriver

READINGS, ENRICHED, ALERTS, DEAD_LETTERS = (
    "sensor-readings",
    "sensor-enriched",
    "sensor-alerts",
    "sensor-readings-dlq",
)


class Reading(pydantic.BaseModel):
    sensor_id: str
    celsius: float
    humidity: float = pydantic.Field(ge=0, le=100)


class EnrichedReading(pydantic.BaseModel):
    sensor_id: str
    site: str
    celsius: float
    fahrenheit: float
    humidity: float


# Static reference data; a table join replaces this once tables exist.
SITES = {"s-1": "greenhouse", "s-2": "cold-store", "s-3": "greenhouse"}
ALERT_ABOVE_C = {"greenhouse": 35.0, "cold-store": 8.0, "unknown": 50.0}


def plausible(reading: Reading) -> bool:
    return -60.0 <= reading.celsius <= 90.0


def enrich(sensor_id: str, reading: Reading) -> EnrichedReading:
    return EnrichedReading(
        sensor_id=sensor_id,
        site=SITES.get(sensor_id, "unknown"),
        celsius=reading.celsius,
        fahrenheit=round(reading.celsius * 9 / 5 + 32, 2),
        humidity=reading.humidity,
    )


def build_topology() -> Topology:
    builder = StreamsBuilder()
    enriched = (
        builder.stream(
            READINGS,
            key_serde=Serdes.string(),
            value_serde=Serdes.model(Reading),
            on_deserialization_error=DeadLetterQueueHandler(DEAD_LETTERS),
            name="readings",
        )
        .filter(lambda sensor, reading: plausible(reading), name="plausible")
        .map_values(enrich, with_key=True, name="enrich")
    )
    out = Serdes.model(EnrichedReading)
    enriched.to(ENRICHED, value_serde=out, name="enriched-sink")
    enriched.filter(lambda sensor, r: r.celsius > ALERT_ABOVE_C[r.site], name="too-hot").to(
        ALERTS, value_serde=out, name="alerts-sink"
    )
    return builder.build()


SAMPLE = [
    ("s-1", b'{"sensor_id": "s-1", "celsius": 24.5, "humidity": 61}'),
    ("s-2", b'{"sensor_id": "s-2", "celsius": 9.5, "humidity": 40}'),
    ("s-3", b'{"sensor_id": "s-3", "celsius": 412.0, "humidity": 50}'),
    ("s-1", b'{"sensor_id": "s-1", "celsius": "hot", "humidity": 50}'),
    ("s-4", b'{"sensor_id": "s-4", "celsius": 20.0, "humidity": 30}'),
]


def main() -> None:
    print(build_topology().describe())
    with TopologyTestDriver(build_topology(), {"application_id": "iot"}) as driver:
        driver.create_input_topic(READINGS, Serdes.string(), Serdes.bytes()).pipe_records(SAMPLE)
        for topic in (ENRICHED, ALERTS):
            output = driver.create_output_topic(
                topic, Serdes.string(), Serdes.model(EnrichedReading)
            )
            for key, value in output.read_key_values_to_list():
                print(f"{topic}: {key} {value.model_dump()}")
        for record in driver.create_output_topic(DEAD_LETTERS).read_records_to_list():
            reason = dict(record.headers)["__streams.errors.message"].decode()
            print(f"{DEAD_LETTERS}: {record.value!r} ({reason.splitlines()[0]})")


if __name__ == "__main__":
    main()
