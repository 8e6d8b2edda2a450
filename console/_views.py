"""Each page's body, from the data ``_cluster.py`` and ``_apps.py`` read, through the
templates (``templates/``, autoescaped: ``_templates.py``). Pure functions: data in,
HTML out, so every page can be rendered in a test without a cluster. What a template
cannot say simply (sorting, sums, the topology's drawing) is worked out here first."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._cluster import Browsed
from ._codecs import FORMATS
from ._graph import topology_svg
from ._guard import CSRF_FIELD, SEAL_FIELD
from ._table_lag import TableLag
from ._templates import render


def is_internal(topic: dict[str, Any]) -> bool:
    """Kafka's own internal topics, and those a name starting with ``_`` marks as some
    service's (the schema registry's ``_schemas``, Kafka Connect's, ...)."""
    return bool(topic["internal"]) or topic["name"].startswith("_")


def overview(
    brokers: dict[str, Any],
    topics: list[dict[str, Any]],
    groups: list[dict[str, Any]],
    apps: list[str],
) -> str:
    user_topics = [t for t in topics if not is_internal(t)]
    return render(
        "overview.html",
        brokers=len(brokers["brokers"]),
        topics=len(user_topics),
        partitions=sum(t["partitions"] for t in topics),
        records=sum(t["records"] for t in user_topics),
        groups=len(groups),
        apps=len(apps),
        cluster_id=brokers["cluster_id"],
    )


def brokers_page(brokers: dict[str, Any]) -> str:
    return render("brokers.html", brokers=brokers["brokers"], controller=brokers["controller"])


def broker_page(configs: list[dict[str, Any]]) -> str:
    return render("broker.html", rows=configs)


def topics_page(
    topics: list[dict[str, Any]],
    csrf: str | None,
    search: str = "",
    tables: Mapping[str, TableLag] | None = None,
) -> str:
    """The topics whose name holds ``search`` (all when empty), internal ones last;
    with ``csrf`` (an admin console's form field), a form to create one; with
    ``tables`` (the console knows the table location), each table topic's lag."""
    needle = search.strip().lower()
    shown = sorted(
        (t for t in topics if needle in t["name"].lower()),
        key=lambda t: (is_internal(t), t["name"]),
    )
    return render(
        "topics.html",
        topics=[{**t, "internal": is_internal(t)} for t in shown],
        total=len(topics),
        search=search,
        csrf=csrf,
        csrf_field=CSRF_FIELD,
        tables=tables,
    )


def topic_page(topic: dict[str, Any], table: TableLag | None = None) -> str:
    return render(
        "topic.html",
        topic=topic,
        records=sum(p["records"] for p in topic["partitions"]),
        table=table,
    )


def messages_page(
    topic: dict[str, Any], browsed: Browsed | None, query: dict[str, str], error: str | None
) -> str:
    return render(
        "messages.html",
        topic=topic,
        browsed=browsed,
        query={"key_format": "auto", "value_format": "auto", **query},
        error=error,
        formats=FORMATS,
    )


def groups_page(groups: list[dict[str, Any]]) -> str:
    return render("groups.html", groups=groups)


def group_page(
    group: dict[str, Any],
    csrf: str | None,
    plan: list[dict[str, Any]] | None,
    seal: str | None,
    message: str | None,
) -> str:
    """A group; with ``csrf`` (an admin console), the reset form, and a previewed
    ``plan`` with the ``seal`` that lets it be applied."""
    assignments = [
        ", ".join(f"{tp.topic}-{tp.partition}" for tp in m["assignment"]) or None
        for m in group["members"]
    ]
    plan_fields = (
        list(
            {
                **(plan[0]["request"] if plan else {}),
                CSRF_FIELD: csrf,
                SEAL_FIELD: seal or "",
            }.items()
        )
        if plan is not None
        else []
    )
    return render(
        "group.html",
        group=group,
        assignments=assignments,
        csrf=csrf,
        csrf_field=CSRF_FIELD,
        plan=plan,
        plan_fields=plan_fields,
        message=message,
    )


def transactions_page(transactions: list[dict[str, Any]]) -> str:
    return render("transactions.html", transactions=transactions)


def apps_page(apps: list[dict[str, Any]]) -> str:
    return render("apps.html", apps=apps)


def app_page(app: dict[str, Any]) -> str:
    if not app["reachable"]:
        return render("app.html", app=app, tasks=[], stores=[], drawing="")
    health, metrics = app["health"], app["metrics"]
    tasks = sorted(
        [(t, "running") for t in health["tasks"]]
        + [(t, "restoring") for t in health["restoring"]]
        + [(t, "standby") for t in health.get("standby", [])]
    )
    known: dict[str, dict[str, float]] = {name: {} for name in _topology_stores(app["topology"])}
    stores = []
    for name, figures in sorted({**known, **metrics.get("stores", {})}.items()):
        restored, remaining = figures.get("restored", 0.0), figures.get("restore_remaining", 0.0)
        stores.append(
            {
                "name": name,
                "keys": figures.get("keys"),
                "restored": restored,
                "remaining": remaining,
                "done": restored / (restored + remaining) if restored + remaining else 1.0,
            }
        )
    drawing = topology_svg(app["topology"]) if app["topology"] else ""
    return render("app.html", app=app, tasks=tasks, stores=stores, drawing=drawing)


def _topology_stores(topology: dict[str, Any] | None) -> list[str]:
    if not topology:
        return []
    return [
        store
        for sub in topology["subtopologies"]
        for node in sub["nodes"]
        for store in node["stores"]
    ]
