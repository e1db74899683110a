"""Sans-I/O record batch v2 format: header view, CRC32C, record codec, compression.

Imports neither asyncio nor socket and never reads the clock (ARCHITECTURE.md).
"""
