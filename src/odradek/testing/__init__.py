"""Helpers for tests and benchmarks: a child-process broker (``serve``) and a local Spark
session (``spark``, with the ``spark`` extra)."""
