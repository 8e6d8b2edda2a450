"""A Fetch response frame as a list of pieces, the records among them uncopied: no I/O.

``_hot_codecs.encode_fetch_response`` joins everything into one buffer, which copies
every fetched byte once more; a response of 55 MiB then briefly takes 110. The pieces
here are the same bytes in the same order (``tests/log_broker/test_fetch_frame.py``
holds them to that codec), and the server writes them one after another.
"""

from __future__ import annotations

from typing import Any

from ._hot_codecs import fetch_response_parts


def fetch_frame_pieces(version: int, correlation_id: int, body: Any) -> list[bytes]:
    """A FetchResponse frame (size prefix, header v0, body) of ``version`` 4-11."""
    return _join_small(fetch_response_parts(version, correlation_id, body))


COPY_BELOW = 1 << 16  # pieces smaller than this are joined: one write, not dozens


def _join_small(parts: list[bytes]) -> list[bytes]:
    pieces: list[bytes] = []
    small: list[bytes] = []
    for part in parts:
        if len(part) < COPY_BELOW:
            small.append(part)
            continue
        if small:
            pieces.append(b"".join(small))
            small = []
        pieces.append(part)
    if small:
        pieces.append(b"".join(small))
    return pieces
