"""``odradek producers describe``: the producers a partition's leader knows (DescribeProducers,
KIP-664) — the same command as ``odradek transactions describe-producers``, which stays, under
the name Kafka's documentation also uses for it::

    odradek producers describe --topic T --partition P [--output json]
"""

from __future__ import annotations

import click

from odradek.cli.transactions import describe_producers

__all__ = ["producers"]


@click.group()
def producers() -> None:
    """Describe the producers of a partition."""


producers.add_command(describe_producers, name="describe")
