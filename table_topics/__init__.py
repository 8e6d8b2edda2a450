"""Topics that are tables: a topic whose ``headrace.table.mode`` is set lands in a Delta
table of its own, exactly once.

The writer is a Kafka client like the schema registry and the console: ``headrace broker
--table-location`` runs it beside the broker, and it reads the topics' settings with
DescribeConfigs and their records with a read_committed consumer. The broker only stores
and serves the settings.
"""

from headrace.base.table_layout import table_path as table_path

from ._metrics import prometheus_text as prometheus_text
from ._records import TopicRecord as TopicRecord
from ._settings import TableSettings as TableSettings
from ._topic_writer import Freshness as Freshness
from ._topic_writer import TopicWriter as TopicWriter
from ._writer import TableWriter as TableWriter

__all__ = [
    "Freshness",
    "TableSettings",
    "TableWriter",
    "TopicRecord",
    "TopicWriter",
    "prometheus_text",
    "table_path",
]
