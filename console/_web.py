"""The console's HTTP application (aiohttp): one route per page, each rendered whole
or, for a live refresh, as its ``<main>`` only; static CSS and JavaScript from the
package; and, in admin mode only, the two actions that change the cluster.

Read-only unless started with ``admin=True``; an admin console needs a sign-in, and its
actions a CSRF field and (a reset) a sealed plan: ``_guard.py`` says how. Every console
answers only the host names of its listener (plus ``allowed_hosts``) and refuses
changes from another site's pages.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from aiohttp import web
from aiohttp.typedefs import Middleware
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError

from headrace.base import PLAINTEXT, ClientSecurity
from headrace.base.http import HttpSite, allowed_hosts, same_site_guard
from headrace.base.millis import epoch_millis

from . import _views as views
from ._apps import AppsReader
from ._chart_svg import line_chart
from ._charts import MetricsHistory, rates, window_totals
from ._cluster import ClusterReader
from ._frame import fragment, page
from ._guard import CSRF_FIELD, SEAL_FIELD, AdminGuard, headers
from ._html import error_box
from ._produce import parse_headers, produce, value_bytes
from ._schemas import SchemasReader
from ._search import MAX_MATCHES, MAX_SCANNED, Query, search
from ._security import SecurityReader
from ._tables import TablesReader
from ._templates import render
from ._transactions import TransactionsReader

STATIC = Path(__file__).parent / "static"
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"
Render = Callable[[web.Request], Awaitable[tuple[str, str]]]  # (title, body)


class Console:
    def __init__(
        self,
        bootstrap_servers: str,
        *,
        apps: list[str] | None = None,
        admin: bool = False,
        security: ClientSecurity = PLAINTEXT,
        schema_registry: str | None = None,
        metrics: Callable[[], Awaitable[bytes | None]] | None = None,
        allowed_host_names: tuple[str, ...] = (),
        chart_every_s: float = 5.0,
        table_location: str | None = None,
    ) -> None:
        """``schema_registry``: the registry's URL, to decode values in its wire format;
        ``metrics``: Prometheus text to serve at ``/metrics`` (the broker's own, when the
        console runs beside it), None while there is none yet; ``allowed_host_names``:
        names it answers to besides those of its listen address; ``chart_every_s``: how
        often the charts sample the broker's metrics; ``table_location``: where the
        tables of table topics live, to show how far each is behind its topic."""
        self.cluster = ClusterReader(bootstrap_servers, security, schema_registry)
        self.schemas = SchemasReader(schema_registry) if schema_registry else None
        self.tables = TablesReader(table_location, self.cluster) if table_location else None
        self.users_and_acls = SecurityReader(bootstrap_servers, security)
        self._metrics = metrics
        self.history = MetricsHistory(metrics, chart_every_s) if metrics is not None else None
        self._bootstrap_servers, self._security = bootstrap_servers, security
        self.apps = AppsReader(apps or [])
        self.admin = admin
        self.guard = AdminGuard() if admin else None
        self._allowed_host_names = allowed_host_names
        self._site: HttpSite | None = None

    @property
    def address(self) -> str:
        if self._site is None:
            raise RuntimeError("the console is not started")
        address: str = self._site.address
        return address

    async def start(self, host: str = "127.0.0.1", port: int = 8080) -> None:
        await self.cluster.start()
        await self.apps.start()
        if self.history is not None:
            self.history.start()
        allowed = allowed_hosts(host, self._allowed_host_names)
        self._site = HttpSite(self.application(allowed), host, port)
        await self._site.start()

    async def stop(self) -> None:
        if self._site is not None:
            await self._site.stop()
            self._site = None
        if self.history is not None:
            await self.history.stop()
        await self.apps.stop()
        await self.cluster.stop()

    @property
    def sign_in_address(self) -> str | None:
        """The address that signs a browser in to an admin console (None: read-only)."""
        return None if self.guard is None else self.guard.sign_in_address(self.address)

    def application(self, allowed: frozenset[str] | None = None) -> web.Application:
        middlewares: list[Middleware] = [headers, same_site_guard(allowed)]
        if self.guard is not None:
            middlewares.append(self.guard.signed_in)
        app = web.Application(client_max_size=64 * 1024, middlewares=middlewares)
        pages: list[tuple[str, str, Render]] = [
            ("/", "/", self._overview),
            ("/brokers", "/brokers", self._brokers),
            ("/brokers/{id}", "/brokers", self._broker),
            ("/topics", "/topics", self._topics),
            ("/topics/{name}", "/topics", self._topic),
            ("/topics/{name}/messages", "/topics", self._messages),
            ("/topics/{name}/search", "/topics", self._search),
            ("/groups", "/groups", self._groups),
            ("/groups/{id}", "/groups", self._group),
            ("/apps", "/apps", self._apps),
            ("/apps/{index}", "/apps", self._app),
            ("/transactions", "/transactions", self._transactions),
            ("/schemas", "/schemas", self._subjects),
            ("/schemas/{subject}", "/schemas", self._subject),
            ("/schemas/{subject}/versions/{version}", "/schemas", self._schema_version),
            ("/schemas/{subject}/diff", "/schemas", self._schema_diff),
            ("/users", "/users", self._users),
            ("/acls", "/acls", self._acls),
            ("/charts", "/charts", self._charts),
        ]
        still = {"/topics/{name}/messages", "/topics/{name}/search"}  # no live refresh
        for path, nav, body in pages:
            app.router.add_get(path, self._page(nav, body, refresh=path not in still))
        app.router.add_post("/topics", self._create_topic)
        app.router.add_post("/topics/{name}/produce", self._produce)
        app.router.add_post("/groups/{id}/reset", self._reset_offsets)
        app.router.add_static("/static", STATIC)
        if self._metrics is not None:
            app.router.add_get("/metrics", self._serve_metrics)
        return app

    async def _serve_metrics(self, request: web.Request) -> web.Response:
        assert self._metrics is not None
        text = await self._metrics()
        if text is None:
            raise web.HTTPServiceUnavailable(text="no metrics yet: the broker is starting")
        return web.Response(body=text, headers={"Content-Type": PROMETHEUS_TEXT})

    def _page(
        self, nav: str, render: Render, refresh: bool
    ) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handle(request: web.Request) -> web.Response:
            status = 200
            try:
                title, body = await render(request)
            except web.HTTPNotFound as missing:  # in the frame: the navigation stays
                title, body, status = "Not found", error_box(missing.text or "not found"), 404
            except web.HTTPException:
                raise
            except (TimeoutError, KafkaError, OSError, EOFError) as error:
                title, body, status = (
                    "Cluster unavailable",
                    error_box(f"{type(error).__name__}: {error}"),
                    502,
                )
            return self._html(request, title, body, nav, refresh, status)

        return handle

    def _html(
        self,
        request: web.Request,
        title: str,
        body: str,
        nav: str,
        refresh: bool = True,
        status: int = 200,
    ) -> web.Response:
        if request.headers.get("X-Console-Fragment"):
            text = fragment(title, body)
        else:
            text = page(
                title,
                body,
                active=nav,
                cluster=self.cluster.bootstrap_servers,
                refresh=refresh,
                admin=self.admin,
            )
        return web.Response(text=text, content_type="text/html", status=status)

    # -- pages --------------------------------------------------------------------------

    async def _overview(self, request: web.Request) -> tuple[str, str]:
        brokers, topics, groups = await asyncio.gather(
            self.cluster.brokers(), self.cluster.topics(), self.cluster.groups()
        )
        return "Overview", views.overview(brokers, topics, groups, self.apps.urls)

    async def _brokers(self, request: web.Request) -> tuple[str, str]:
        return "Brokers", views.brokers_page(await self.cluster.brokers())

    async def _broker(self, request: web.Request) -> tuple[str, str]:
        broker_id = _path_id(request, "id", "broker")
        if broker_id not in {b["id"] for b in (await self.cluster.brokers())["brokers"]}:
            raise web.HTTPNotFound(text=f"no broker {broker_id}")
        return f"Broker {broker_id}", views.broker_page(
            await self.cluster.broker_configs(broker_id)
        )

    async def _topics(self, request: web.Request) -> tuple[str, str]:
        topics = await self.cluster.topics()
        tables = None if self.tables is None else await self.tables.lags(topics)
        return "Topics", views.topics_page(topics, self._csrf, request.query.get("q", ""), tables)

    async def _topic(self, request: web.Request) -> tuple[str, str]:
        name = request.match_info["name"]
        topic = await self.cluster.topic(name)
        if topic is None:
            raise web.HTTPNotFound(text=f"topic {name!r} does not exist")
        table = None if self.tables is None else await self.tables.lag(topic)
        return f"Topic {name}", views.topic_page(topic, table) + self._produce_form(topic)

    def _produce_form(self, topic: dict[str, Any]) -> str:
        """An admin console's form to produce a record to ``topic`` (nothing otherwise)."""
        if self._csrf is None:
            return ""
        return render(
            "produce_form.html",
            topic=topic["name"],
            partitions=[p["partition"] for p in topic["partitions"]],
            csrf=self._csrf,
            csrf_field=CSRF_FIELD,
            has_registry=self.schemas is not None,
        )

    async def _messages(self, request: web.Request) -> tuple[str, str]:
        name = request.match_info["name"]
        topic = await self.cluster.topic(name)
        if topic is None:
            raise web.HTTPNotFound(text=f"topic {name!r} does not exist")
        query = dict(request.query)
        try:
            partition = query.get("partition")
            browsed = await self.cluster.messages(
                name,
                [_int(partition, "partition")] if partition else None,
                offset=_int(query["offset"], "offset") if query.get("offset") else None,
                timestamp=_time_ms(query["from_time"]) if query.get("from_time") else None,
                limit=_int(query.get("limit") or "50", "limit"),
                read_committed=query.get("isolation", "read_committed") != "read_uncommitted",
                key_format=query.get("key_format", "auto"),
                value_format=query.get("value_format", "auto"),
            )
            error = None
        except ValueError as bad:
            browsed, error = None, str(bad)
        return f"Messages of {name}", views.messages_page(topic, browsed, query, error)

    async def _search(self, request: web.Request) -> tuple[str, str]:
        name = request.match_info["name"]
        topic = await self.cluster.topic(name)
        if topic is None:
            raise web.HTTPNotFound(text=f"topic {name!r} does not exist")
        asked = dict(request.query)
        found, error = None, None
        if asked.get("go"):
            try:
                found = await search(self.cluster, name, _search_query(asked))
            except ValueError as bad:
                error = str(bad)
        return f"Search {name}", render(
            "search.html",
            topic=name,
            partitions=[p["partition"] for p in topic["partitions"]],
            query=asked,
            found=found,
            error=error,
            max_scanned=MAX_SCANNED,
            max_matches=MAX_MATCHES,
        )

    async def _groups(self, request: web.Request) -> tuple[str, str]:
        return "Consumer groups", views.groups_page(await self.cluster.groups())

    async def _group(
        self,
        request: web.Request,
        plan: list[dict[str, Any]] | None = None,
        message: str | None = None,
    ) -> tuple[str, str]:
        group_id = request.match_info["id"]
        group = await self.cluster.group(group_id)
        if group is None:
            raise web.HTTPNotFound(text=f"group {group_id!r} does not exist")
        seal = None if plan is None or self.guard is None else self.guard.seal(group_id, plan)
        return f"Group {group_id}", views.group_page(group, self._csrf, plan, seal, message)

    async def _transactions(self, request: web.Request) -> tuple[str, str]:
        async with TransactionsReader(
            self._bootstrap_servers, security=self._security, client_id="headrace-console"
        ) as reader:
            return "Transactions in flight", views.transactions_page(await reader.in_flight())

    def _registry(self) -> SchemasReader:
        if self.schemas is None:
            raise web.HTTPNotFound(
                text="the console knows no schema registry: start it with --schema-registry URL"
            )
        return self.schemas

    async def _subjects(self, request: web.Request) -> tuple[str, str]:
        if self.schemas is None:
            return "Schemas", render("no_registry.html")
        listed = await self.schemas.subjects()
        return "Schemas", render("schemas.html", url=self.schemas.url, **listed)

    async def _subject(self, request: web.Request) -> tuple[str, str]:
        subject = request.match_info["subject"]
        found = await self._registry().subject(subject)
        return f"Subject {subject}", render("subject.html", **found)

    async def _schema_version(self, request: web.Request) -> tuple[str, str]:
        subject = request.match_info["subject"]
        number = _path_id(request, "version", "version")
        version = await self._registry().version(subject, number)
        return f"{subject} version {number}", render("schema_version.html", version=version)

    async def _schema_diff(self, request: web.Request) -> tuple[str, str]:
        subject = request.match_info["subject"]
        try:
            older = _int(request.query.get("from", ""), "from")
            newer = _int(request.query.get("to", ""), "to")
        except ValueError as bad:
            raise web.HTTPBadRequest(text=str(bad)) from None
        lines = await self._registry().diff(subject, older, newer)
        return f"{subject}: version {older} to {newer}", render(
            "schema_diff.html", subject=subject, lines=lines, older=older, newer=newer
        )

    async def _users(self, request: web.Request) -> tuple[str, str]:
        answer = await self.users_and_acls.users()
        return "Users", render("users.html", rows=answer.rows, refused=answer.refused)

    async def _acls(self, request: web.Request) -> tuple[str, str]:
        answer = await self.users_and_acls.acls()
        return "ACLs", render("acls.html", rows=answer.rows, refused=answer.refused)

    async def _charts(self, request: web.Request) -> tuple[str, str]:
        if self.history is None:
            return "Charts", render("charts.html", history=None)
        samples = list(self.history.samples)
        groups = sorted({g for s in samples for g in s.lag})
        lag_charts = [
            line_chart(
                f"chart-lag-{group}",
                f"Lag of {group}",
                "records",
                [(s.at, s.lag[group]) for s in samples if group in s.lag],
            )
            for group in groups
        ]
        return "Charts", render(
            "charts.html",
            history=self.history,
            produce_chart=line_chart(
                "chart-produced", "Produced", "records/s", rates(samples, "records_in")
            ),
            consume_chart=line_chart(
                "chart-consumed", "Consumed", "records/s", rates(samples, "records_out")
            ),
            lag_charts=lag_charts,
            totals=window_totals(samples),
        )

    async def _apps(self, request: web.Request) -> tuple[str, str]:
        return "Applications", views.apps_page(await self.apps.overview())

    async def _app(self, request: web.Request) -> tuple[str, str]:
        index = _path_id(request, "index", "application")
        if not 0 <= index < len(self.apps.urls):
            raise web.HTTPNotFound(text="no such application")
        app = await self.apps.app(index)
        name = (app["health"] or {}).get("application_id") or app["url"]
        return f"Application {name}", views.app_page(app)

    # -- admin actions ------------------------------------------------------------------

    @property
    def _csrf(self) -> str | None:
        """The CSRF field of an admin console's forms (None: read-only, no forms)."""
        return None if self.guard is None else self.guard.csrf

    async def _action_form(self, request: web.Request) -> dict[str, str]:
        """The form of an action, once it is known to come from this console's pages."""
        if self.guard is None:
            raise web.HTTPForbidden(
                text="the console is read-only; start it with --admin to change the cluster"
            )
        form = {k: str(v) for k, v in (await request.post()).items()}
        self.guard.check_form(form)
        return form

    async def _create_topic(self, request: web.Request) -> web.Response:
        form = await self._action_form(request)
        name = str(form.get("name", "")).strip()
        try:
            configs = dict(
                item.split("=", 1)
                for item in str(form.get("configs", "")).split(",")
                if item.strip()
            )
            await self.cluster.create_topic(
                name,
                _int(str(form.get("partitions") or "1"), "partitions"),
                _int(str(form.get("replication_factor") or "1"), "replication factor"),
                {k.strip(): v.strip() for k, v in configs.items()},
            )
        except (ValueError, KafkaError) as error:
            body = error_box(str(error)) + views.topics_page(
                await self.cluster.topics(), self._csrf
            )
            return self._html(request, "Topics", body, "/topics", status=400)
        raise web.HTTPSeeOther(f"/topics/{name}")

    async def _produce(self, request: web.Request) -> web.Response:
        """One record from the topic page's form; then the message browser at it."""
        form = await self._action_form(request)
        name = request.match_info["name"]
        topic = await self.cluster.topic(name)
        if topic is None:
            raise web.HTTPNotFound(text=f"topic {name!r} does not exist")
        try:
            partition = form.get("partition") or None
            registry = None if self.schemas is None else self.schemas.url
            produced = await produce(
                self.cluster.client_options,
                name,
                key=form["key"].encode() if form.get("key") else None,
                value=await value_bytes(
                    registry, name, form.get("value", ""), form.get("schema", "none")
                ),
                headers=parse_headers(form.get("headers", "")),
                partition=None if partition is None else _int(partition, "partition"),
            )
        except (ValueError, KafkaError) as error:
            body = error_box(str(error)) + views.topic_page(topic) + self._produce_form(topic)
            return self._html(request, f"Topic {name}", body, "/topics", status=400)
        raise web.HTTPSeeOther(
            f"/topics/{quote(name, safe='')}/messages?partition={produced.partition}"
            f"&offset={produced.offset}&limit=1"
        )

    async def _reset_offsets(self, request: web.Request) -> web.Response:
        """Preview, then apply: a reset shows its plan first, and only a second POST of
        that plan (``step=execute``) commits it; a group with members is refused, as
        kafka-consumer-groups does, since its members would overwrite the new offsets."""
        form = await self._action_form(request)
        group_id = request.match_info["id"]
        group = await self.cluster.group(group_id)
        if group is None:
            raise web.HTTPNotFound(text=f"group {group_id!r} does not exist")
        if group["members"]:
            title, body = await self._group(
                request,
                message=f"group {group_id!r} has {len(group['members'])} "
                "active member(s); stop them before resetting its offsets",
            )
            return self._html(request, title, body, "/groups", status=409)
        try:
            plan = await self._plan(group, form)
        except ValueError as error:
            title, body = await self._group(request, message=str(error))
            return self._html(request, title, body, "/groups", status=400)
        if form.get("step") == "execute":
            assert self.guard is not None  # _action_form refused a read-only console
            if not self.guard.check_seal(group_id, plan, form.get(SEAL_FIELD, "")):
                title, body = await self._group(
                    request,
                    plan=plan,
                    message="this reset was not previewed, or its offsets changed since: "
                    "check the preview below and apply it again",
                )
                return self._html(request, title, body, "/groups", refresh=False, status=409)
            await self._commit(
                group_id, {TopicPartition(p["topic"], p["partition"]): p["new"] for p in plan}
            )
            raise web.HTTPSeeOther(f"/groups/{group_id}")
        title, body = await self._group(request, plan=plan)
        return self._html(request, title, body, "/groups", refresh=False)

    async def _plan(self, group: dict[str, Any], form: dict[str, str]) -> list[dict[str, Any]]:
        to, topic = form.get("to", "earliest"), form.get("topic", "").strip()
        rows = [o for o in group["offsets"] if not topic or o["topic"] == topic]
        if not rows:
            raise ValueError(
                f"the group has no committed offsets{f' on {topic!r}' if topic else ''}"
            )
        bounds = {}
        for name in {o["topic"] for o in rows}:
            info = await self.cluster.topic(name)
            if info is None:
                raise ValueError(f"topic {name!r} does not exist")
            bounds.update(
                {
                    (name, p["partition"]): (p["start_offset"], p["end_offset"])
                    for p in info["partitions"]
                }
            )
        request = {"to": to, "topic": topic, "offset": form.get("offset", "")}
        plan = []
        for o in rows:
            start, end = bounds[(o["topic"], o["partition"])]
            if to == "earliest":
                new = start
            elif to == "latest":
                new = end
            elif to == "offset":
                new = max(start, min(end, _int(form.get("offset", ""), "offset")))
            else:
                raise ValueError(f"cannot reset to {to!r}")
            plan.append(
                {
                    "topic": o["topic"],
                    "partition": o["partition"],
                    "current": o["committed"],
                    "new": new,
                    "request": request,
                }
            )
        return plan

    async def _commit(self, group_id: str, offsets: dict[TopicPartition, int]) -> None:
        consumer = AIOKafkaConsumer(
            **self.cluster.client_options, group_id=group_id, enable_auto_commit=False
        )
        await consumer.start()
        try:
            consumer.assign(list(offsets))
            await consumer.commit(offsets)
        finally:
            await consumer.stop()


def _path_id(request: web.Request, part: str, what: str) -> int:
    """A number in the path: anything else names no page, so it is a 404, not an error."""
    text = request.match_info[part]
    try:
        return int(text)
    except ValueError:
        raise web.HTTPNotFound(text=f"no {what} {text!r}") from None


def _search_query(asked: dict[str, str]) -> Query:
    """A search's conditions from the form's fields; ValueError for one that is wrong."""
    partition = asked.get("partition")
    return Query(
        key=asked.get("key") or None,
        value_contains=asked.get("value") or None,
        json_path=asked.get("path") or None,
        from_ms=_time_ms(asked["from"]) if asked.get("from") else None,
        to_ms=_time_ms(asked["to"]) if asked.get("to") else None,
        partitions=[_int(partition, "partition")] if partition else None,
        max_scanned=_int(asked.get("max_scanned") or "10000", "scan at most"),
        limit=_int(asked.get("limit") or "100", "show at most"),
        read_committed=asked.get("isolation", "read_committed") != "read_uncommitted",
    )


def _int(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{what} must be a whole number, not {text!r}") from None


def _time_ms(text: str) -> int:
    """Epoch milliseconds, or an ISO-8601 time (UTC when it names no zone)."""
    if text.strip().isdigit():
        return int(text)
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"a time must be epoch milliseconds or an ISO-8601 time, not {text!r}"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return epoch_millis(when)
