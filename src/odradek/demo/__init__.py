"""The end-to-end demo behind ``odradek demo``: page views streamed through an embedded broker
and a Spark Structured Streaming job, counted per page per event-time window.

    generator ──Producer──► page-views ──Spark (format "odradek", groupId)──► window counts
        ──► page-view-counts (format "odradek")  and  Parquet files

Modules: ``generator`` (the events and the thread producing them), ``pipeline`` (the Spark
session and the streaming query), ``summary`` (the outputs read back, the end-to-end check,
the printed text), ``runner`` (``run_demo``: set-up, progress, drain, shutdown, signals).
``cli.demo`` is the command. Importing this package imports nothing else; ``pipeline`` and
``runner`` need the ``spark`` extra (pyspark and pyarrow) and Java.
"""
