"""One module per Kafka API; ``build_router`` registers them all."""

from __future__ import annotations

from .._router import Router
from . import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    alter_configs,
    api_versions,
    create_partitions,
    create_topics,
    delete_groups,
    delete_records,
    delete_topics,
    describe_configs,
    describe_groups,
    describe_transactions,
    end_txn,
    fetch,
    find_coordinator,
    heartbeat,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    list_transactions,
    metadata,
    offset_commit,
    offset_fetch,
    produce,
    sync_group,
    txn_offset_commit,
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
        create_partitions.ROUTE,
        delete_topics.ROUTE,
        describe_configs.ROUTE,
        alter_configs.ALTER_ROUTE,
        alter_configs.INCREMENTAL_ROUTE,
        find_coordinator.ROUTE,
        join_group.ROUTE,
        sync_group.ROUTE,
        heartbeat.ROUTE,
        leave_group.ROUTE,
        offset_commit.ROUTE,
        offset_fetch.ROUTE,
        describe_groups.ROUTE,
        list_groups.ROUTE,
        delete_groups.ROUTE,
        add_partitions_to_txn.ROUTE,
        add_offsets_to_txn.ROUTE,
        end_txn.ROUTE,
        txn_offset_commit.ROUTE,
        describe_transactions.ROUTE,
        list_transactions.ROUTE,
    ):
        router.add(route)
    router.add(api_versions.route(router))
    return router
