"""The console's pages for the schema registry, users and ACLs, message search and
produce, and the broker's charts, in a real browser; every figure is checked against
what another client reads (confluent-kafka's AdminClient and registry client, the
registry's REST API)."""

from __future__ import annotations

import difflib
import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from console_browsing import figure, nav_links, open_page, table, wait_for
from console_scene import AVRO_TOPIC, PAYMENT, Scene, screenshot

pytestmark = pytest.mark.slow

SUBJECT = f"{AVRO_TOPIC}-value"
PAYMENT_V2 = {
    **PAYMENT,
    "fields": [*PAYMENT["fields"], {"name": "note", "type": "string", "default": ""}],
}


def _rest(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


@pytest.fixture(scope="module")
def registry(scene: Scene) -> Any:
    """The registry with a second version of the Avro subject, a JSON Schema subject
    checked at its own level, and the global level set, all through confluent-kafka."""
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    client = SchemaRegistryClient({"url": scene.registry_url})
    client.register_schema(SUBJECT, Schema(json.dumps(PAYMENT_V2), "AVRO"))
    schema = {"type": "object", "properties": {"id": {"type": "integer"}}}
    client.register_schema("orders-value", Schema(json.dumps(schema), "JSON"))
    client.set_compatibility("orders-value", "FULL")
    client.set_compatibility(level="BACKWARD_TRANSITIVE")
    try:
        yield client
    finally:
        client.close()


def test_schemas_list_subjects_as_the_registry_does(
    scene: Scene, browser: Any, registry: Any
) -> None:
    open_page(browser, f"{scene.console_url}/schemas", "schemas")
    rows = {r[0]: r for r in table(browser, "subjects")}
    assert set(rows) == set(registry.get_subjects())
    for subject, row in rows.items():
        latest = registry.get_latest_version(subject)
        config = _rest(f"{scene.registry_url}/config/{subject}?defaultToGlobal=true")
        assert row[1:] == [
            str(len(registry.get_versions(subject))),
            str(latest.version),
            str(latest.schema_id),
            latest.schema.schema_type,
            config["compatibilityLevel"],
        ]
    assert rows["orders-value"][5] == "FULL"
    assert figure(browser, "global compatibility") == "BACKWARD_TRANSITIVE"


def test_a_subject_its_versions_and_a_diff_between_two(
    scene: Scene, browser: Any, registry: Any
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    open_page(browser, f"{scene.console_url}/schemas/{SUBJECT}", "schemas-subject")
    versions = [registry.get_version(SUBJECT, v) for v in registry.get_versions(SUBJECT)]
    assert [r[:3] for r in table(browser, "versions")] == [
        [str(v.version), str(v.schema_id), "AVRO"] for v in versions
    ]
    assert figure(browser, "compatibility") == "BACKWARD_TRANSITIVE"  # the global level
    pretty = [json.dumps(json.loads(v.schema.schema_str), indent=2) for v in versions]
    assert browser.find_element(By.ID, "schema").text == pretty[-1]
    # The diff, chosen in the page's own form: version 1 to version 2.
    Select(browser.find_element(By.NAME, "from")).select_by_value("1")
    Select(browser.find_element(By.NAME, "to")).select_by_value("2")
    browser.find_element(By.CSS_SELECTOR, "form[action$='/diff'] button").click()
    wait_for(browser, "#diff")
    screenshot(browser, "schemas-diff")
    shown = [line.text for line in browser.find_elements(By.CSS_SELECTOR, "#diff span")]
    expected = difflib.unified_diff(
        pretty[0].splitlines(), pretty[1].splitlines(), "version 1", "version 2", lineterm=""
    )
    assert [s.strip() for s in shown] == [e.strip() for e in expected]
    added = [s.text for s in browser.find_elements(By.CSS_SELECTOR, "#diff span.add")]
    assert any('"name": "note"' in a for a in added)
    # One version on its own page.
    open_page(browser, f"{scene.console_url}/schemas/{SUBJECT}/versions/1", "schemas-version")
    assert figure(browser, "schema id") == str(versions[0].schema_id)
    assert browser.find_element(By.ID, "schema").text == pretty[0]
    open_page(browser, f"{scene.console_url}/schemas/orders-value", "schemas-subject-json")
    assert figure(browser, "compatibility") == "FULL" and figure(browser, "type") == "JSON"


def test_an_unknown_subject_is_a_404_inside_the_frame(scene: Scene, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    open_page(browser, f"{scene.console_url}/schemas/no-such-subject", "schemas-unknown")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Not found"
    assert "Schemas" in nav_links(browser)
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(f"{scene.console_url}/schemas/no-such-subject", timeout=10)
    assert missing.value.code == 404
    missing.value.close()
