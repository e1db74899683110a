"""Fault injection for tests and long runs: storage crash-recovery fuzz, cluster faults."""
