"""A registry process: the ``_schemas`` log plus the REST API on one address."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ._http import create_app
from ._kafka_log import KafkaSchemaLog
from ._registry import Registry


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
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://{self._host}:{self._port}"

    async def start(self) -> None:
        await self.log.start()
        try:
            runner = web.AppRunner(create_app(self.registry, self._users), access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, self._host, self._port)
            await site.start()
        except BaseException:
            await self.log.stop()
            raise
        self._runner = runner
        if self._port == 0:
            self._port = int(runner.addresses[0][1])

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self.log.stop()

    async def __aenter__(self) -> SchemaRegistryServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
