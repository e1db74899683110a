"""Log compaction (``cleanup.policy=compact``): keep at least the latest record of every key.

Modules, one concept each (Kafka's names):

- ``config``: ``CleanerConfig``, the broker-level ``log.cleaner.*`` settings.
- ``offset_map``: ``OffsetMap``, key hash → latest offset, bounded by the dedupe buffer size.
- ``log_to_clean``: pure decisions — the cleanable range of a log (cleaner checkpoint,
  ``min.compaction.lag.ms``, the active segment), its dirty ratio, ``max.compaction.lag.ms``
  and which log is the filthiest.
- ``segment_groups``: pure — runs of segments merged into one cleaned segment.
- ``batch_filter``: pure — which records of a batch survive, and the rewritten batch.
- ``cleaner``: ``Cleaner``, the I/O of one pass over one log: map the dirty section, write
  ``.cleaned`` segments, swap them in (``Log.replace_segments``).
- ``cleaner_manager``: ``LogCleanerManager``, the ``cleaner-offset-checkpoint`` files and the
  state of each log (in progress, aborted, uncleanable).
- ``log_cleaner``: ``LogCleaner``, the cleaner threads and ``clean_once`` for tests.

Crash safety rests on file suffixes: ``.cleaned`` files are work in progress (the loader
deletes them); renaming the cleaned ``.log`` to ``.swap`` commits the pass for its segments
(the loader finishes the swap); old segments go through ``.deleted`` like retention's.
"""
