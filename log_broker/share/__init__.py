"""Share groups (KIP-932): queue-style consumption, where members share partitions and
each record is acquired by one member at a time, under a lock, until acknowledged.

- ``_partition``: one share partition's records and their states (the state machine);
- ``_group``: membership and the assignment (every member gets every partition);
- ``_sessions``: share sessions and the epochs that order a member's requests;
- ``_coordinator``: all of the above for the broker, without I/O;
- ``_codec``: the records of ``__share_group_state``, where snapshots are persisted;
- ``_reading``: what a share fetch reads from a partition log;
- ``_service``: the coordinator wired to the logs (reads, persistence, timers).
The handlers (keys 76-79 and 90) live with the others in ``log_broker.handlers``;
``headrace groups`` shows share groups as a client (``headrace.client_tools.groups``).
"""

from ._config import BROKER_CONFIG_NAMES as BROKER_CONFIG_NAMES
from ._config import GROUP_CONFIG_NAMES as GROUP_CONFIG_NAMES
from ._config import SHARE_STATE_TOPIC as SHARE_STATE_TOPIC
from ._config import PartitionRules as PartitionRules
from ._config import ShareConfig as ShareConfig
from ._config import share_from_properties as share_from_properties
from ._errors import ShareError as ShareError
from ._service import ShareService as ShareService
