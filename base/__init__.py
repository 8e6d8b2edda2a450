"""What every layer needs and nothing of ours: it imports no other package of headrace.

- :mod:`headrace.base.progress`: a one-line progress bar for terminals.
- :mod:`headrace.base.http`: serving an aiohttp application, the same way everywhere.
- :mod:`headrace.base.kafka_admin`: kio requests to any Kafka-protocol broker, with TLS
  and SASL, for what aiokafka does not ask (groups as a non-member, log directories,
  transactions, ACLs); :mod:`headrace.base.log_dirs`: bytes on disk per partition
  (DescribeLogDirs); :mod:`headrace.base.scram`: SCRAM for both ends of a login.
- ``ClientSecurity``: a Kafka client's TLS and SASL options, from code or from Kafka's
  client properties (``read_properties``); ``ClientSecurityError`` (a ValueError) for
  options that cannot work.
"""

from ._client_security import PLAINTEXT as PLAINTEXT
from ._client_security import ClientSecurity as ClientSecurity
from ._client_security import ClientSecurityError as ClientSecurityError
from ._properties import parse_properties as parse_properties
from ._properties import read_properties as read_properties

__all__ = [
    "PLAINTEXT",
    "ClientSecurity",
    "ClientSecurityError",
    "parse_properties",
    "read_properties",
]
