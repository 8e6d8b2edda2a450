"""Tire-pressure trend detection: tell a slow leak from a blow-out.

Each tire reports its pressure on ``tire-pressure``, keyed by ``<vehicle>/<tire>``, as
JSON ``{"ts": <ms>, "psi": <float>}``; the record timestamp is taken from ``ts``. A
pressure that sinks from 45 to 41 psi over a quarter of an hour is a slow leak: service
the tire soon. One that falls from 45 to 20 psi within seconds is a blow-out: stop now.

The topology keeps, per tire, the readings of the last 15 minutes and the tire's status
(an aggregation into a key-value store, so the status survives restarts through its
changelog), and classifies every new reading against that history:

* ``blowout``: a drop of at least 20 psi from any reading of the last 10 seconds;
* ``slow-leak``: a drop of at least 4 psi from the highest reading of the last 15 minutes;
* ``ok`` otherwise (a tire pumped back up recovers).

Only changes of status leave the topology, on ``tire-alerts``: one alert per incident,
not one per reading. The current status of every tire is queryable in the store
``tire-status``.

Run it with ``python -m headrace.examples.tire_pressure``.
"""

from __future__ import annotations

from typing import Any

from headrace import Serdes, StreamsBuilder, Topology, materialized
from headrace.testing import TestRecord, TopologyTestDriver

READINGS, ALERTS, STATUS_STORE = "tire-pressure", "tire-alerts", "tire-status"
HISTORY_MS = 15 * 60_000
BLOWOUT_MS, BLOWOUT_PSI = 10_000, 20.0
LEAK_PSI = 4.0


def classify(history: list[list[float]], ts: int, psi: float) -> str:
    recent = [p for t, p in history if t >= ts - BLOWOUT_MS]
    if recent and max(recent) - psi >= BLOWOUT_PSI:
        return "blowout"
    if history and max(p for _t, p in history) - psi >= LEAK_PSI:
        return "slow-leak"
    return "ok"


def track(tire: str, reading: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    """Fold one reading into the tire's state: prune, classify, note a change of status."""
    ts, psi = reading["ts"], float(reading["psi"])
    history = [[t, p] for t, p in state["history"] if t >= ts - HISTORY_MS]
    status = classify(history, ts, psi)
    history.append([ts, psi])
    changed = status != state["status"]
    alert = {"tire": tire, "status": status, "psi": psi, "ts": ts} if changed else None
    return {"history": history, "status": status, "alert": alert}


def build_topology() -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream(
            READINGS,
            key_serde=Serdes.string(),
            value_serde=Serdes.json(),
            timestamp_extractor=lambda tire, reading, ts: int(reading["ts"]),
        )
        .group_by_key()
        .aggregate(
            lambda: {"history": [], "status": "ok", "alert": None},
            track,
            materialized=materialized(STATUS_STORE, value_serde=Serdes.json(), caching=False),
        )
        .to_stream()
        .filter(lambda tire, state: state["alert"] is not None)
        .map_values(lambda state: state["alert"])
        .to(ALERTS, key_serde=Serdes.string(), value_serde=Serdes.json())
    )
    return builder.build()


def _readings(tire: str, start: int, points: list[tuple[int, float]]) -> list[TestRecord]:
    return [TestRecord(tire, {"ts": start + t, "psi": psi}, None) for t, psi in points]


T0 = 1_700_000_000_000
MINUTE = 60_000
SAMPLE = [
    # front-left loses 1 psi every 3.5 minutes: a slow leak once it is 4 psi down
    *_readings("truck-7/front-left", T0, [(i * 210_000, 45.0 - i) for i in range(5)]),
    # rear-right is steady, then blows out within 6 seconds
    *_readings("truck-7/rear-right", T0, [(i * 2 * MINUTE, 45.0) for i in range(6)]),
    *_readings("truck-7/rear-right", T0 + 10 * MINUTE, [(2_000, 44.5), (6_000, 20.0)]),
    *_readings("truck-7/rear-right", T0 + 10 * MINUTE, [(9_000, 4.0)]),  # still blown: no new alert
]


def main() -> None:
    with TopologyTestDriver(build_topology(), {"application_id": "tires"}) as driver:
        driver.create_input_topic(READINGS, Serdes.string(), Serdes.json()).pipe_records(SAMPLE)
        for tire, alert in driver.create_output_topic(
            ALERTS, Serdes.string(), Serdes.json()
        ).read_key_values_to_list():
            print(f"{ALERTS}: {tire} {alert['status']} at {alert['psi']} psi")
        store = driver.get_key_value_store(STATUS_STORE)
        for tire, state in store.all():
            print(f"status {tire}: {state['status']}")


if __name__ == "__main__":
    main()
