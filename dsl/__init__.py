"""The declarative DSL: StreamsBuilder, KStream, KTable, windows, serdes."""
