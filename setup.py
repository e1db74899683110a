"""Declares odradek's one compiled part; everything else is configured in pyproject.toml.

``odradek._columns`` (the column decoder of record batches) is optional: where it cannot be
compiled (no C compiler) the install still succeeds, with a warning, and
``odradek.records.columns`` falls back to its Python builder.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("odradek._columns", sources=["src/odradek/_columns.c"], optional=True),
        Extension("odradek._append", sources=["src/odradek/_append.c"], optional=True),
        Extension("odradek._records", sources=["src/odradek/_records.c"], optional=True),
    ],
)
