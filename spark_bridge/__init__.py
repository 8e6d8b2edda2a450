"""PySpark data source over Kafka-protocol topics and the Delta Lake hand-off."""
