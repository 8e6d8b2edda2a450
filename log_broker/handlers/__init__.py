"""One module per Kafka API; ``build_router`` registers them all."""

from __future__ import annotations

from .._router import Router
from . import (
    alter_configs,
    api_versions,
    create_topics,
    delete_records,
    delete_topics,
    describe_configs,
    fetch,
    init_producer_id,
    list_offsets,
    metadata,
    produce,
)


def build_router() -> Router:
    router = Router()
    for route in (
        produce.ROUTE,
        fetch.ROUTE,
        list_offsets.ROUTE,
        metadata.ROUTE,
        delete_records.ROUTE,
        init_producer_id.ROUTE,
        create_topics.ROUTE,
        delete_topics.ROUTE,
        describe_configs.ROUTE,
        alter_configs.ALTER_ROUTE,
        alter_configs.INCREMENTAL_ROUTE,
    ):
        router.add(route)
    router.add(api_versions.route(router))
    return router
