"""What every layer needs and nothing of ours: it imports no other package of headrace.

- :mod:`headrace.base.progress`: a one-line progress bar for terminals.
- :mod:`headrace.base.table`: rows as an aligned text table, for every command's output.
- :mod:`headrace.base.table_layout`: where a table topic's Delta table lives and the app
  ids its commits record offsets under, for the table writer and the console alike.
- :mod:`headrace.base.http`: serving an aiohttp application, the same way everywhere.
- :mod:`headrace.base.memory`: the process's memory by who holds it (Python's blocks,
  the C heap in use and kept), for the broker's and the applications' metrics.
- :mod:`headrace.base.kafka_admin`: kio requests to any Kafka-protocol broker, with TLS
  and SASL, for what aiokafka does not ask (groups as a non-member, log directories,
  transactions, ACLs); :mod:`headrace.base.log_dirs`: bytes on disk per partition
  (DescribeLogDirs); :mod:`headrace.base.scram`: SCRAM for both ends of a login, and
  :mod:`headrace.base.scram_credentials` the credentials file in a broker's data dir;
  :mod:`headrace.base.acls`: ACL bindings and filters as the protocol carries them. The
  broker and the client commands both use these, so they live here, below both.
- ``ClientSecurity``: a Kafka client's TLS and SASL options, from code or from Kafka's
  client properties (``read_properties``, as ``java.util.Properties`` reads them;
  ``PropertiesError``, a ValueError, for text Java refuses); ``ClientSecurityError`` (a
  ValueError) for options that cannot work.
- ``write_atomically`` and ``fsync_dir``: small files that are never seen half written
  (write a temporary file, fsync it, rename it, fsync the directory).
- ``Lifecycle``, ``transition_table``, ``check_transition``: named state machines with
  their transition tables; ``IllegalTransitionError`` for a move a table forbids.
- ``TopicPartition``: one partition of one topic, ordered, the key of offsets.
- ``Clock`` (monotonic and wall milliseconds), ``SystemClock``, and ``ManualClock``
  for timers driven by hand.
- ``TransactionError``, ``BrokerError``, ``CoordinatorNotAvailableError``: names that
  packages on both sides raise, one class each (see ``_errors``).
"""

from ._client_security import PLAINTEXT as PLAINTEXT
from ._client_security import ClientSecurity as ClientSecurity
from ._client_security import ClientSecurityError as ClientSecurityError
from ._clock import Clock as Clock
from ._clock import ManualClock as ManualClock
from ._clock import SystemClock as SystemClock
from ._errors import BrokerError as BrokerError
from ._errors import CoordinatorNotAvailableError as CoordinatorNotAvailableError
from ._errors import TransactionError as TransactionError
from ._files import fsync_dir as fsync_dir
from ._files import write_atomically as write_atomically
from ._lifecycle import IllegalTransitionError as IllegalTransitionError
from ._lifecycle import Lifecycle as Lifecycle
from ._lifecycle import TransitionTable as TransitionTable
from ._lifecycle import check_transition as check_transition
from ._lifecycle import transition_table as transition_table
from ._properties import PropertiesError as PropertiesError
from ._properties import parse_properties as parse_properties
from ._properties import read_properties as read_properties
from ._topic_partition import TopicPartition as TopicPartition

__all__ = [
    "PLAINTEXT",
    "BrokerError",
    "ClientSecurity",
    "ClientSecurityError",
    "Clock",
    "CoordinatorNotAvailableError",
    "IllegalTransitionError",
    "Lifecycle",
    "ManualClock",
    "PropertiesError",
    "SystemClock",
    "TopicPartition",
    "TransactionError",
    "TransitionTable",
    "check_transition",
    "fsync_dir",
    "parse_properties",
    "read_properties",
    "transition_table",
    "write_atomically",
]
