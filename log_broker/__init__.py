"""The built-in broker: speaks the Kafka wire protocol over asyncio TCP."""
