"""Milliseconds from ``datetime`` and ``timedelta``, exactly as Java's time classes give them.

``int(moment.timestamp() * 1000)`` goes through a binary float and truncates: 17 minutes
4.147 seconds after the epoch is ``1024.147`` seconds, which is ``1024146.9999...`` once
multiplied, and becomes ``1024146``. About one millisecond value in thirteen built that way
comes out one millisecond early. These functions work in integer arithmetic on the
``timedelta`` itself, and round toward the past as ``Instant.toEpochMilli()`` and
``Duration.toMillis()`` do (a sub-millisecond remainder is dropped, also before 1970).

>>> from datetime import UTC, datetime, timedelta
>>> epoch_millis(datetime(1970, 1, 1, 0, 17, 4, 147000, tzinfo=UTC))
1024147
>>> duration_millis(timedelta(seconds=4, milliseconds=147))
4147
>>> duration_millis(timedelta(microseconds=-1))
-1
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MS = timedelta(milliseconds=1)


def duration_millis(span: timedelta) -> int:
    """Whole milliseconds in ``span``, floored (Java's ``Duration.toMillis()``)."""
    return span // _ONE_MS


def epoch_millis(moment: datetime) -> int:
    """Milliseconds since the epoch, floored (Java's ``Instant.toEpochMilli()``).

    A naive ``datetime`` is taken as local time, as ``datetime.timestamp()`` takes it.
    """
    if moment.tzinfo is None:
        moment = moment.astimezone()
    return (moment - EPOCH) // _ONE_MS
