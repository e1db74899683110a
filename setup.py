"""Declares odradek's compiled parts; everything else is configured in pyproject.toml.

Five C extensions, each optional — where one cannot be compiled (no C compiler) the install
still succeeds, with a warning, and its Python reference is used instead:

- ``odradek._columns``: column-wise decoding of record batches (``odradek.records.columns``,
  the Spark data source's read path);
- ``odradek._records``: the consumer's record loop (``odradek.client.consumer.decoder``);
- ``odradek._append``: the storage append fast path (``odradek.storage.file_records``);
- ``odradek._producer_state``: the producer state's in-order shortcut
  (``odradek.storage.producer_state``);
- ``odradek._record_encoder``: the record codec's ``encode_record`` (``odradek.records.codec``,
  the producer's per-record encoding).

They share ``_batch_format.h`` (batch layout, big-endian reads, varints).
"""

from setuptools import Extension, setup

_SHARED = ["src/odradek/_batch_format.h"]


def _extension(name: str) -> Extension:
    return Extension(
        f"odradek.{name}", sources=[f"src/odradek/{name}.c"], depends=_SHARED, optional=True
    )


setup(
    ext_modules=[
        _extension("_columns"),
        _extension("_append"),
        _extension("_records"),
        _extension("_record_encoder"),
        _extension("_producer_state"),
    ]
)
