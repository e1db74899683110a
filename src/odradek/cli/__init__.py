"""The ``odradek`` command line: one module per noun, one function per verb."""
