"""Record batch compression codecs, as Kafka clients write them.

Codec numbers follow the batch attributes: 1 gzip, 2 snappy, 3 lz4, 4 zstd.

- snappy: Java clients write xerial-framed streams (a 16-byte magic header, then
  length-prefixed raw snappy blocks); librdkafka may write one raw snappy block.
  Decoding accepts both; encoding writes xerial framing, which every client reads.
- lz4: the LZ4 frame format (not raw blocks).
- gzip and zstd: standard streams.
"""

from __future__ import annotations

import struct

import cramjam

from ._errors import CorruptRecordError, InvalidRecordError

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024
_BLOCK_LENGTH = struct.Struct(">i")


def _snappy_compress(data: bytes) -> bytes:
    out = bytearray(_XERIAL_HEADER)
    for start in range(0, len(data), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(data[start : start + _XERIAL_BLOCK]))
        out += _BLOCK_LENGTH.pack(len(block))
        out += block
    return bytes(out)


def _snappy_decompress(data: bytes) -> bytes:
    # The 8-byte magic is what tells the framings apart; the two version words after it
    # are informational.
    if not data.startswith(_XERIAL_MAGIC) or len(data) < len(_XERIAL_HEADER):
        return bytes(cramjam.snappy.decompress_raw(data))
    out = bytearray()
    pos = len(_XERIAL_HEADER)
    while pos < len(data):
        if pos + 4 > len(data):
            raise CorruptRecordError("truncated xerial snappy block length")
        (length,) = _BLOCK_LENGTH.unpack_from(data, pos)
        pos += 4
        if length < 0 or pos + length > len(data):
            raise CorruptRecordError("xerial snappy block runs past the end")
        out += cramjam.snappy.decompress_raw(data[pos : pos + length])
        pos += length
    return bytes(out)


def compress(codec: int, data: bytes) -> bytes:
    """Compress ``data`` with the batch codec number ``codec`` (0 returns it as is)."""
    if codec == 0:
        return data
    if codec == 1:
        return bytes(cramjam.gzip.compress(data))
    if codec == 2:
        return _snappy_compress(data)
    if codec == 3:
        return bytes(cramjam.lz4.compress(data))
    if codec == 4:
        return bytes(cramjam.zstd.compress(data))
    raise InvalidRecordError(f"unknown compression codec {codec}")


def decompress(codec: int, data: bytes) -> bytes:
    """Undo ``compress``; damaged input raises ``CorruptRecordError``."""
    try:
        if codec == 0:
            return data
        if codec == 1:
            return bytes(cramjam.gzip.decompress(data))
        if codec == 2:
            return _snappy_decompress(data)
        if codec == 3:
            return bytes(cramjam.lz4.decompress(data))
        if codec == 4:
            return bytes(cramjam.zstd.decompress(data))
    except cramjam.DecompressionError as exc:
        raise CorruptRecordError(f"cannot decompress batch: {exc}") from exc
    raise InvalidRecordError(f"unknown compression codec {codec}")
