"""Helpers for tests and benchmarks: a child-process broker (``serve``), a local Spark
session (``spark``, with the ``spark`` extra), a real ZooKeeper standalone node or ensemble
(``zookeeper``, Debian's ``zookeeper`` package) and a cluster of ``odradek serve`` processes
on it (``cluster``)."""
