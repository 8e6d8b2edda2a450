"""Record batch compression codecs, as Kafka clients write them.

Codec numbers follow the batch attributes: 1 gzip, 2 snappy, 3 lz4, 4 zstd.

- snappy: Java clients write xerial-framed streams (a 16-byte magic header, then
  length-prefixed raw snappy blocks); librdkafka may write one raw snappy block.
  Decoding accepts both; encoding writes xerial framing, which every client reads.
- lz4: the LZ4 frame format (not raw blocks).
- gzip and zstd: standard streams.

Decompression is bounded (``limit``) and streamed, so no batch costs more memory than
that however far it claims to inflate.
"""

from __future__ import annotations

import struct
import zlib

import cramjam
import lz4.frame
import zstandard

from ._errors import CorruptRecordError, InvalidRecordError

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024
_BLOCK_LENGTH = struct.Struct(">i")
# zstd frames name the window they need; a larger one would be memory a client chose.
_ZSTD_MAX_WINDOW = 1 << 25


def _snappy_compress(data: bytes) -> bytes:
    out = bytearray(_XERIAL_HEADER)
    for start in range(0, len(data), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(data[start : start + _XERIAL_BLOCK]))
        out += _BLOCK_LENGTH.pack(len(block))
        out += block
    return bytes(out)


# Decompression is bounded: a batch is inflated in chunks and refused as soon as its
# output passes ``limit``, so a small batch that claims gigabytes (a "zip bomb") costs
# at most ``limit`` bytes of memory and the time to produce them.
DEFAULT_INFLATE_LIMIT = 64 * 1024 * 1024
_CHUNK = 1024 * 1024


def _too_large(limit: int) -> CorruptRecordError:
    return CorruptRecordError(f"batch decompresses to more than {limit} bytes")


def _gzip_decompress(data: bytes, limit: int) -> bytes:
    out = bytearray()
    rest = data
    while rest:  # a gzip stream may hold several members, one after the other
        inflater = zlib.decompressobj(31)
        pending = rest
        while not inflater.eof:
            out += inflater.decompress(pending, limit + 1 - len(out))
            if len(out) > limit:
                raise _too_large(limit)
            pending = inflater.unconsumed_tail
            if not pending and not inflater.eof:
                raise CorruptRecordError("truncated gzip stream")
        rest = inflater.unused_data
    return bytes(out)


def _lz4_decompress(data: bytes, limit: int) -> bytes:
    out = bytearray()
    rest = data
    while rest:  # possibly several frames
        frames = lz4.frame.LZ4FrameDecompressor()
        pending = rest
        while not frames.eof:
            out += frames.decompress(pending, limit + 1 - len(out))
            if len(out) > limit:
                raise _too_large(limit)
            pending = b""
            if frames.needs_input and not frames.eof:
                raise CorruptRecordError("truncated lz4 frame")
        rest = frames.unused_data
    return bytes(out)


def _zstd_decompress(data: bytes, limit: int) -> bytes:
    out = bytearray()
    context = zstandard.ZstdDecompressor(max_window_size=_ZSTD_MAX_WINDOW)
    with context.stream_reader(data, read_across_frames=True) as reader:
        while chunk := reader.read(min(_CHUNK, limit + 1 - len(out))):
            out += chunk
            if len(out) > limit:
                raise _too_large(limit)
    return bytes(out)


def _snappy_raw(data: bytes | memoryview, limit: int) -> bytes:
    # A raw snappy block states its decompressed length up front.
    if cramjam.snappy.decompress_raw_len(data) > limit:
        raise _too_large(limit)
    return bytes(cramjam.snappy.decompress_raw(data))


def _snappy_decompress(data: bytes, limit: int) -> bytes:
    # The 8-byte magic is what tells the framings apart; the two version words after it
    # are informational.
    if not data.startswith(_XERIAL_MAGIC) or len(data) < len(_XERIAL_HEADER):
        return _snappy_raw(data, limit)
    out = bytearray()
    pos = len(_XERIAL_HEADER)
    while pos < len(data):
        if pos + 4 > len(data):
            raise CorruptRecordError("truncated xerial snappy block length")
        (length,) = _BLOCK_LENGTH.unpack_from(data, pos)
        pos += 4
        if length < 0 or pos + length > len(data):
            raise CorruptRecordError("xerial snappy block runs past the end")
        out += _snappy_raw(data[pos : pos + length], limit - len(out))
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


def decompress(codec: int, data: bytes, limit: int = DEFAULT_INFLATE_LIMIT) -> bytes:
    """Undo ``compress``, refusing output past ``limit`` bytes; damaged or oversized
    input raises ``CorruptRecordError``."""
    try:
        if codec == 0:
            return data
        if codec == 1:
            return _gzip_decompress(data, limit)
        if codec == 2:
            return _snappy_decompress(data, limit)
        if codec == 3:
            return _lz4_decompress(data, limit)
        if codec == 4:
            return _zstd_decompress(data, limit)
    except (cramjam.DecompressionError, zlib.error, zstandard.ZstdError, RuntimeError) as exc:
        raise CorruptRecordError(f"cannot decompress batch: {exc}") from exc
    raise InvalidRecordError(f"unknown compression codec {codec}")
