"""The processor API, the Topology, the runtime and the test driver."""
