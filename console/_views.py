"""Each page's body, from the data ``_cluster.py`` and ``_apps.py`` read. Pure
functions: data in, HTML out, so every page can be rendered in a test without a
cluster."""

from __future__ import annotations

from datetime import UTC, datetime
from html import escape
from typing import Any
from urllib.parse import quote

from ._cluster import Browsed
from ._codecs import FORMATS
from ._graph import topology_svg
from ._guard import CSRF_FIELD, SEAL_FIELD
from ._html import Markup, error_box, link, table
from ._templates import render


def _figures(items: list[tuple[str, Any]]) -> str:
    return (
        '<div class="figures">'
        + "".join(
            f'<div class="figure" data-figure="{escape(name, quote=True)}"><b>{_num(value)}</b>'
            f"<span>{escape(name)}</span></div>"
            for name, value in items
        )
        + "</div>"
    )


def _num(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{value:,}" if isinstance(value, int) else escape(str(value))


def _time(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def overview(
    brokers: dict[str, Any],
    topics: list[dict[str, Any]],
    groups: list[dict[str, Any]],
    apps: list[str],
) -> str:
    user_topics = [t for t in topics if not is_internal(t)]
    return (
        _figures(
            [
                ("brokers", len(brokers["brokers"])),
                ("topics", len(user_topics)),
                ("partitions", sum(t["partitions"] for t in topics)),
                ("records", sum(t["records"] for t in user_topics)),
                ("consumer groups", len(groups)),
                ("applications", len(apps)),
            ]
        )
        + f"<p>Cluster id <code>{escape(str(brokers['cluster_id']))}</code>.</p>"
    )


def brokers_page(brokers: dict[str, Any]) -> str:
    return render("brokers.html", brokers=brokers["brokers"], controller=brokers["controller"])


def broker_page(configs: list[dict[str, Any]]) -> str:
    return "<h2>Configuration</h2>" + _configs(configs)


def is_internal(topic: dict[str, Any]) -> bool:
    """Kafka's own internal topics, and those a name starting with ``_`` marks as some
    service's (the schema registry's ``_schemas``, Kafka Connect's, ...)."""
    return bool(topic["internal"]) or topic["name"].startswith("_")


def topics_page(topics: list[dict[str, Any]], csrf: str | None, search: str = "") -> str:
    """The topics whose name holds ``search`` (all when empty), internal ones last;
    with ``csrf`` (an admin console's form field), a form to create one."""
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
    )


def topic_page(topic: dict[str, Any]) -> str:
    name = quote(topic["name"], safe="")
    parts = topic["partitions"]
    rows = [
        (
            str(p["partition"]),  # ids, not quantities: no thousands separators
            str(p["leader"]),
            ",".join(map(str, p["replicas"])),
            ",".join(map(str, p["isr"])),
            p["start_offset"],
            p["end_offset"],
            p["records"],
            p["size"],
        )
        for p in parts
    ]
    return (
        _figures(
            [
                ("partitions", len(parts)),
                ("records", sum(p["records"] for p in parts)),
                ("bytes", "-" if topic["size"] is None else topic["size"]),
            ]
        )
        + f"<p>{link(f'/topics/{name}/messages', 'Browse messages')} · "
        + f"{link(f'/topics/{name}/search', 'Search messages')}</p>"
        + "<h2>Partitions</h2>"
        + table(
            (
                "PARTITION",
                "LEADER",
                "REPLICAS",
                "ISR",
                "START OFFSET",
                "END OFFSET",
                "RECORDS",
                "SIZE (BYTES)",
            ),
            rows,
            table_id="partitions",
        )
        + "<h2>Configuration</h2>"
        + _configs(topic["configs"])
    )


def messages_page(
    topic: dict[str, Any], browsed: Browsed | None, query: dict[str, str], error: str | None
) -> str:
    def option(name: str, value: str, label: str) -> str:
        chosen = " selected" if query.get(name, "") == value else ""
        return f'<option value="{escape(value, quote=True)}"{chosen}>{escape(label)}</option>'

    def field(name: str, label: str, kind: str = "text") -> str:
        value = escape(query.get(name, ""), quote=True)
        return f'<label>{label}<input name="{name}" type="{kind}" value="{value}"></label>'

    partitions = "".join(
        option("partition", str(p["partition"]), str(p["partition"])) for p in topic["partitions"]
    )
    query = {"key_format": "auto", "value_format": "auto", **query}
    formats = {
        fmt: "".join(option(fmt, f, f) for f in FORMATS) for fmt in ("key_format", "value_format")
    }
    form = (
        '<form class="inline" method="get">'
        f'<label>Partition<select name="partition">{option("partition", "", "all")}{partitions}</select></label>'
        + field("offset", "From offset", "number")
        + field("from_time", "From time (ISO or ms)")
        + field("limit", "Per partition", "number")
        + f'<label>Key as<select name="key_format">{formats["key_format"]}</select></label>'
        + f'<label>Value as<select name="value_format">{formats["value_format"]}</select></label>'
        + '<label>Isolation<select name="isolation">'
        + option("isolation", "read_committed", "read_committed")
        + option("isolation", "read_uncommitted", "read_uncommitted")
        + "</select></label>"
        + '<button type="submit">Show</button></form>'
    )
    if error or browsed is None:
        return form + error_box(error or "nothing to show")
    rows = [
        (
            m.partition,
            m.offset,
            _time(m.timestamp),
            _pre(m.key),
            _pre(m.value),
            Markup("<br>".join(f"{escape(k)}={escape(v)}" for k, v in m.headers)) or None,
        )
        for m in browsed.messages
    ]
    if browsed.problem:
        form += error_box(f"Some values did not decode (shown as hex): {browsed.problem}")
    return form + table(
        ("PARTITION", "OFFSET", "TIMESTAMP", "KEY", "VALUE", "HEADERS"), rows, table_id="messages"
    )


def _pre(text: str | None) -> Markup | None:
    return None if text is None else Markup(f"<pre>{escape(text)}</pre>")


def groups_page(groups: list[dict[str, Any]]) -> str:
    rows = [
        (
            link(f"/groups/{quote(g['group'], safe='')}", g["group"]),
            g["state"],
            g["members"],
            g["protocol"] or None,
        )
        for g in groups
    ]
    return table(("GROUP", "STATE", "MEMBERS", "ASSIGNOR"), rows, table_id="groups")


def group_page(
    group: dict[str, Any],
    csrf: str | None,
    plan: list[dict[str, Any]] | None,
    seal: str | None,
    message: str | None,
) -> str:
    """A group; with ``csrf`` (an admin console), the reset form, and a previewed
    ``plan`` with the ``seal`` that lets it be applied."""
    members = [
        (
            m["member_id"],
            m["client_id"],
            m["client_host"],
            ", ".join(f"{tp.topic}-{tp.partition}" for tp in m["assignment"]) or None,
        )
        for m in group["members"]
    ]
    offsets = [
        (o["topic"], o["partition"], o["committed"], o["end_offset"], o["lag"], o["member"])
        for o in group["offsets"]
    ]
    body = (
        _figures(
            [("state", group["state"]), ("members", len(group["members"])), ("lag", group["lag"])]
        )
        + "<h2>Members</h2>"
        + table(("MEMBER", "CLIENT", "HOST", "ASSIGNMENT"), members, table_id="members")
        + "<h2>Offsets and lag</h2>"
        + table(
            ("TOPIC", "PARTITION", "COMMITTED", "END OFFSET", "LAG", "MEMBER"),
            offsets,
            table_id="offsets",
        )
    )
    if message:
        body += error_box(message)
    if csrf is not None:
        body += _reset_form(group, plan, csrf, seal)
    return body


def _csrf_field(csrf: str) -> str:
    return f'<input type="hidden" name="{CSRF_FIELD}" value="{escape(csrf, quote=True)}">'


def _reset_form(
    group: dict[str, Any], plan: list[dict[str, Any]] | None, csrf: str, seal: str | None
) -> str:
    action = f"/groups/{quote(group['group'], safe='')}/reset"
    form = (
        f'<h2>Reset offsets</h2><form class="inline" method="post" action="{action}">'
        + _csrf_field(csrf)
        + '<label>To<select name="to"><option value="earliest">earliest</option>'
        '<option value="latest">latest</option><option value="offset">offset</option></select></label>'
        '<label>Offset<input name="offset" type="number" min="0"></label>'
        '<label>Topic (all when empty)<input name="topic"></label>'
        '<button name="step" value="preview">Preview</button></form>'
    )
    if plan is None:
        return form
    rows = [(p["topic"], p["partition"], p["current"], p["new"]) for p in plan]
    fields = {**(plan[0]["request"] if plan else {}), CSRF_FIELD: csrf, SEAL_FIELD: seal or ""}
    hidden = "".join(
        f'<input type="hidden" name="{k}" value="{escape(str(v), quote=True)}">'
        for k, v in fields.items()
    )
    return (
        form
        + "<h3>Preview</h3>"
        + table(("TOPIC", "PARTITION", "CURRENT", "NEW"), rows, table_id="reset-plan")
        + f'<form method="post" action="{action}">{hidden}'
        '<button name="step" value="execute">Apply this reset</button></form>'
    )


def transactions_page(transactions: list[dict[str, Any]]) -> str:
    rows = [
        (
            t["transactional_id"],
            t["state"],
            str(t["producer_id"]),  # ids, not quantities: no thousands separators
            str(t["producer_epoch"]),
            str(t["coordinator"]),
            _time(t["started_ms"]),
            f"{t['age_s']:.1f} s",
            f"{t['timeout_ms'] / 1000:g} s",
            ", ".join(t["partitions"]) or None,
        )
        for t in transactions
    ]
    return _figures(
        [
            ("open transactions", len(transactions)),
            ("oldest", f"{transactions[0]['age_s']:.1f} s" if transactions else "-"),
        ]
    ) + table(
        (
            "TRANSACTIONAL ID",
            "STATE",
            "PRODUCER",
            "EPOCH",
            "COORDINATOR",
            "STARTED",
            "AGE",
            "TIMEOUT",
            "PARTITIONS",
        ),
        rows,
        table_id="transactions",
    )


def apps_page(apps: list[dict[str, Any]]) -> str:
    rows = []
    for app in apps:
        health = app["health"] or {}
        rows.append(
            (
                link(f"/apps/{app['index']}", health.get("application_id") or app["url"]),
                app["url"],
                health.get("state") if app["reachable"] else "unreachable",
                len(health.get("tasks", [])),
                len(health.get("restoring", [])),
                app["metrics"].get("consumed"),
                app["metrics"].get("produced"),
                app["metrics"].get("lag"),
            )
        )
    if not apps:
        return "<p>No applications: start the console with <code>--apps URL,...</code> (each instance's HTTP address).</p>"
    return table(
        ("APPLICATION", "INSTANCE", "STATE", "TASKS", "RESTORING", "CONSUMED", "PRODUCED", "LAG"),
        rows,
        table_id="apps",
    )


def app_page(app: dict[str, Any]) -> str:
    if not app["reachable"]:
        return error_box(f"{app['url']} does not answer")
    health, metrics = app["health"], app["metrics"]
    body = _figures(
        [
            ("state", health["state"]),
            ("tasks", len(health["tasks"])),
            ("consumed", metrics.get("consumed", 0)),
            ("produced", metrics.get("produced", 0)),
            ("lag", metrics.get("lag", 0)),
            ("commits", metrics.get("commits", 0)),
        ]
    )
    tasks = (
        [(t, "running") for t in health["tasks"]]
        + [(t, "restoring") for t in health["restoring"]]
        + [(t, "standby") for t in health.get("standby", [])]
    )
    body += "<h2>Tasks</h2>" + table(("TASK", "STATE"), sorted(tasks), table_id="tasks")
    stores = []
    known: dict[str, dict[str, float]] = {name: {} for name in _topology_stores(app["topology"])}
    for name, figures in sorted({**known, **metrics.get("stores", {})}.items()):
        restored, remaining = figures.get("restored", 0.0), figures.get("restore_remaining", 0.0)
        done = restored / (restored + remaining) if restored + remaining else 1.0
        bar = Markup(f'<progress max="1" value="{done:.3f}"></progress> {done:.0%}')
        stores.append((name, figures.get("keys"), restored, remaining, bar))
    body += "<h2>Stores</h2>" + table(
        ("STORE", "KEYS", "RESTORED", "LEFT TO RESTORE", "RESTORE PROGRESS"),
        stores,
        table_id="stores",
    )
    if app["topology"]:
        body += "<h2>Topology</h2>" + topology_svg(app["topology"])
        body += f"<details><summary>As text</summary><pre>{escape(app['topology']['text'])}</pre></details>"
    return body


def _topology_stores(topology: dict[str, Any] | None) -> list[str]:
    if not topology:
        return []
    return [
        store
        for sub in topology["subtopologies"]
        for node in sub["nodes"]
        for store in node["stores"]
    ]


def _configs(configs: list[dict[str, Any]]) -> str:
    return table(
        ("CONFIG", "VALUE", "SOURCE"),
        [(c["name"], c["value"], c["source"]) for c in configs],
        table_id="configs",
    )
