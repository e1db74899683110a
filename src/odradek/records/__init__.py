"""Sans-I/O record batch v2 format: batch header view and CRC32C (``batch``), the one reference
for the bytes of records (``record_format``), the batch codec (``codec``), column-wise decoding
(``columns``), varints and compression.

Imports neither asyncio nor socket and never reads the clock (ARCHITECTURE.md).
"""
