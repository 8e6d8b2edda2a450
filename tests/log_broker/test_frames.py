"""Frames are read in chunks: every complete frame that has arrived comes out at once,
a frame split over reads comes out whole, and the size and time bounds still hold."""

from __future__ import annotations

import asyncio
import struct

import pytest

from headrace.log_broker._errors import FrameTooLargeError
from headrace.log_broker._frames import CHUNK, FrameReader


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def reader_of(*chunks: bytes, eof: bool = True) -> asyncio.StreamReader:
    reader = asyncio.StreamReader(limit=4 * CHUNK)
    for chunk in chunks:
        reader.feed_data(chunk)
    if eof:
        reader.feed_eof()
    return reader


def frames_of(reader: asyncio.StreamReader, max_bytes: int = 1 << 20) -> FrameReader:
    return FrameReader(reader, max_bytes, idle_s=5, read_s=5)


async def test_pipelined_frames_come_out_together() -> None:
    payloads = [b"request-%d" % i for i in range(100)]
    frames = frames_of(reader_of(b"".join(framed(p) for p in payloads)))
    assert await frames.frames() == payloads


async def test_a_frame_split_over_reads_comes_out_whole() -> None:
    big = bytes(range(256)) * 1000  # several chunks
    data = framed(b"first") + framed(big) + framed(b"")
    reader = reader_of(eof=False)
    frames = frames_of(reader)

    async def trickle() -> None:
        for at in range(0, len(data), 7_001):
            reader.feed_data(data[at : at + 7_001])
            await asyncio.sleep(0)
        reader.feed_eof()

    feeding = asyncio.ensure_future(trickle())
    seen: list[bytes] = []
    while len(seen) < 3:
        seen += await frames.frames()
    await feeding
    assert seen == [b"first", big, b""]
    with pytest.raises(asyncio.IncompleteReadError):
        await frames.frames()


@pytest.mark.parametrize("size", [-1, 1001])
async def test_a_size_outside_the_bound_is_refused_before_its_bytes(size: int) -> None:
    frames = frames_of(reader_of(framed(b"ok") + struct.pack(">i", size)), max_bytes=1000)
    assert await frames.frames() == [b"ok"]
    with pytest.raises(FrameTooLargeError, match=r"socket\.request\.max\.bytes"):
        await frames.frames()


async def test_a_silent_connection_times_out_as_idle() -> None:
    frames = FrameReader(reader_of(eof=False), 1000, idle_s=0.05, read_s=5)
    with pytest.raises(TimeoutError, match=r"connections\.max\.idle\.ms"):
        await frames.frames()


async def test_a_frame_that_stops_coming_times_out_from_its_size() -> None:
    reader = reader_of(struct.pack(">i", 100) + b"partial", eof=False)
    frames = FrameReader(reader, 1000, idle_s=5, read_s=0.05)
    with pytest.raises(TimeoutError, match="request of 100 bytes"):
        await frames.frames()
