"""The log engine, synchronous: segments and their indexes, logs, recovery, retention,
compaction (``cleaner``), checkpoints and the log directories' manager."""
