"""State stores: key-value, window and session; RocksDB and in-memory backends."""
