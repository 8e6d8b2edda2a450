"""Where a table topic's Delta table lives, and the app ids its commits record offsets under.

The table writer (``table_topics``) writes this layout and the console reads it to tell
how far a table is behind; the console may not import the writer (it sits above the
console), so the layout lives here, below both.

- A topic's table: ``<location>/<topic>`` (``table_path``); ``location`` a directory or
  an ``s3://`` URL.
- Offsets: every commit records, as a Delta application transaction per partition, the
  next offset to read: ``{app_id}/{topic}/{partition}`` (``offsets_app_id``), the same
  scheme as the export job's (``spark_bridge._delta``).
- The app ids: ``TABLE_APP_ID`` names what the table covers of the topic that has the
  name now (what a reader that knows the topic by name reads); the writer resumes from
  ``incarnation_app_id(TABLE_APP_ID, topic_id)``, so a topic deleted and created again
  under its name is not taken for the old one.

>>> table_path("/data/lake/", "orders")
'/data/lake/orders'
>>> offsets_app_id(TABLE_APP_ID, "orders", 2)
'headrace.table/orders/2'
"""

from __future__ import annotations

TABLE_APP_ID = "headrace.table"


def table_path(location: str, topic: str) -> str:
    """Where ``topic``'s table lives under ``location``.

    >>> table_path("s3://lake/tables/", "orders"), table_path("/data/lake", "orders")
    ('s3://lake/tables/orders', '/data/lake/orders')
    """
    return f"{location.rstrip('/')}/{topic}"


def incarnation_app_id(app_id: str, topic_id: str) -> str:
    """``app_id`` for the topic whose id is ``topic_id`` (itself when there is none: a
    cluster that gives no topic ids).

    >>> incarnation_app_id(TABLE_APP_ID, "KaLJ402eR0qnsjJbWrLfMA")
    'headrace.table.KaLJ402eR0qnsjJbWrLfMA'
    >>> incarnation_app_id(TABLE_APP_ID, "")
    'headrace.table'
    """
    return f"{app_id}.{topic_id}" if topic_id else app_id


def offsets_app_id(app_id: str, topic: str, partition: int) -> str:
    """The application transaction whose version is ``partition``'s next offset to read."""
    return f"{app_id}/{topic}/{partition}"
