"""Helpers for tests and benchmarks: a child-process broker (``serve``)."""
