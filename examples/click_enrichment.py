"""Clicks enriched from a user-profile table: a stream-table left join.

Profiles arrive on ``user-profiles`` (keyed by user id, JSON ``{"name", "country"}``;
a ``None`` value deletes one) and are kept as a table. Clicks arrive on ``clicks``
keyed by session id, JSON ``{"user", "page"}``. The topology

1. re-keys each click by its user (through the repartition topic
   ``<application id>-enrich-left-repartition``, so a click meets its user's profile
   in one task),
2. looks up the user's profile as of the click: a later profile change affects later
   clicks only,
3. writes ``{"user", "page", "name", "country"}`` to ``enriched-clicks``, with ``None``
   for name and country when the user has no profile.

Run ``python -m headrace.examples.click_enrichment`` to pipe sample data through the test driver.
"""

from __future__ import annotations

from typing import Any

from headrace import Serdes, StreamsBuilder, Topology
from headrace.testing import TopologyTestDriver

PROFILES, CLICKS, ENRICHED = "user-profiles", "clicks", "enriched-clicks"


def enrich(user: str, click: dict[str, Any], profile: dict[str, Any] | None) -> dict[str, Any]:
    profile = profile or {}
    return {
        "user": user,
        "page": click["page"],
        "name": profile.get("name"),
        "country": profile.get("country"),
    }


def build(builder: StreamsBuilder | None = None) -> StreamsBuilder:
    builder = builder or StreamsBuilder()
    json, string = Serdes.json(), Serdes.string()
    profiles = builder.table(PROFILES, key_serde=string, value_serde=json)
    (
        builder.stream(CLICKS, key_serde=string, value_serde=json)
        .select_key(lambda session, click: click["user"])
        .left_join(
            profiles, enrich, with_key=True, key_serde=string, value_serde=json, name="enrich"
        )
        .to(ENRICHED, key_serde=string, value_serde=json)
    )
    return builder


def build_topology() -> Topology:
    return build().build()


SAMPLE_PROFILES = [
    ("ann", {"name": "Ann", "country": "NO"}),
    ("bob", {"name": "Bob", "country": "IT"}),
]
SAMPLE_CLICKS = [
    ("s-1", {"user": "ann", "page": "/home"}),
    ("s-2", {"user": "bob", "page": "/cart"}),
    ("s-3", {"user": "eve", "page": "/home"}),  # no profile
]


def main() -> None:
    with TopologyTestDriver(build_topology(), {"application_id": "clicks"}) as driver:
        driver.create_input_topic(PROFILES, Serdes.string(), Serdes.json()).pipe_key_value_list(
            SAMPLE_PROFILES
        )
        driver.create_input_topic(CLICKS, Serdes.string(), Serdes.json()).pipe_key_value_list(
            SAMPLE_CLICKS
        )
        output = driver.create_output_topic(ENRICHED, Serdes.string(), Serdes.json())
        for user, click in output.read_key_values_to_list():
            print(f"{ENRICHED}: {user} {click}")


if __name__ == "__main__":
    main()
