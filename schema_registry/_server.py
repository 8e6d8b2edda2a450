"""A registry process: the ``_schemas`` log plus the REST API on one address."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from headrace.base.http import HttpSite
from headrace.base.http import allowed_hosts as allowed_hosts_for

from ._http import create_app
from ._kafka_log import KafkaSchemaLog
from ._registry import Registry

log = logging.getLogger(__name__)


class SchemaRegistryServer:
    """``async with SchemaRegistryServer(bootstrap, port=8081) as server: server.url``.

    Starting reads ``_schemas`` to its end before the port opens, so the first answer
    already knows every schema; ``port=0`` picks a free one."""

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        host: str = "127.0.0.1",
        port: int = 8081,
        users: dict[str, str] | None = None,
        allowed_hosts: Iterable[str] = (),
        topic: str = "_schemas",
        replication_factor: int = 1,
        client_options: dict[str, Any] | None = None,
    ) -> None:
        self.log = KafkaSchemaLog(
            bootstrap_servers,
            topic=topic,
            replication_factor=replication_factor,
            client_options=client_options,
        )
        self.registry = Registry(self.log)
        self._host = host
        self._port = port
        self._users = users
        self._allowed_hosts = allowed_hosts_for(host, allowed_hosts)
        if self._allowed_hosts is None and not users:
            log.warning(
                "the schema registry listens on every interface with no users file and no "
                "allowed host names: anyone who can reach %s:%d may change schemas",
                host,
                port,
            )
        self._site: HttpSite | None = None

    @property
    def url(self) -> str:
        return f"http://{self._host}:{self._port}"

    async def start(self) -> None:
        await self.log.start()
        app = create_app(self.registry, self._users, self._allowed_hosts)
        site = HttpSite(app, self._host, self._port)
        try:
            await site.start()
        except BaseException:
            await self.log.stop()
            raise
        self._site = site
        self._port = site.port

    async def stop(self) -> None:
        if self._site is not None:
            await self._site.stop()
            self._site = None
        await self.log.stop()

    async def __aenter__(self) -> SchemaRegistryServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
