"""Idempotent-producer state and the transaction coordinator (broker side, no I/O)."""
