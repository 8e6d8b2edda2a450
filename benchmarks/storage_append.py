"""Storage hot path: append then read 1,000,000 records of 100 bytes, 1,000 to a batch.

Batches are encoded up front (a producer's work, not the broker's); each append gets a
fresh bytearray as a produce request would. Reads walk the log like a consumer with
1 MiB fetches. Prints MB/s and records/s for each phase.

    python benchmarks/storage_append.py [--records N] [--batch N] [--dir PATH]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from headrace.log_broker.records import _batches as _records
from headrace.log_broker.storage import PartitionLog, TopicConfig


def _template(batch_records: int) -> bytes:
    records = [
        _records.Record(i, 1_700_000_000_000 + i, None, bytes([i % 251]) * 100)
        for i in range(batch_records)
    ]
    return _records.encode_batch(records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--fetch-bytes", type=int, default=1 << 20)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()

    template = _template(args.batch)
    batches = args.records // args.batch
    payloads = [bytearray(template) for _ in range(batches)]
    total_bytes = len(template) * batches
    records = batches * args.batch

    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        log = PartitionLog.open(Path(directory) / "bench-0", "bench", 0, TopicConfig())

        start = time.perf_counter()
        for payload in payloads:
            log.append(payload, now_ms=0)
        append_s = time.perf_counter() - start

        start = time.perf_counter()
        log.sync()
        sync_s = time.perf_counter() - start

        start = time.perf_counter()
        offset, read_bytes = 0, 0
        while offset < log.log_end_offset:
            data = log.read(offset, args.fetch_bytes)
            read_bytes += len(data)
            # The next fetch offset comes from the last batch header, as a client's would.
            last = _records.read_header(data, len(data) - len(template))
            offset = last.last_offset + 1
        read_s = time.perf_counter() - start
        log.close()

    assert read_bytes == total_bytes, (read_bytes, total_bytes)
    mb = total_bytes / 1e6
    print(f"{records:,} records x 100 B in {batches:,} batches ({mb:.1f} MB on disk)")
    print(f"append: {mb / append_s:8.1f} MB/s  {records / append_s:12,.0f} records/s")
    print(f"sync:   {sync_s * 1000:8.1f} ms for the whole log")
    print(f"read:   {mb / read_s:8.1f} MB/s  {records / read_s:12,.0f} records/s")


if __name__ == "__main__":
    main()
