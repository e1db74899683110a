"""Entry point of the ``odradek`` command: the top-level group and error handling.

A user mistake prints one line on stderr and exits with status 2; it never shows a traceback.
"""

from __future__ import annotations

import sys

import click

from odradek._version import __version__
from odradek.cli.acls import acls
from odradek.cli.api_versions import api_versions
from odradek.cli.cluster import cluster
from odradek.cli.configs import configs
from odradek.cli.console import console
from odradek.cli.consume import consume
from odradek.cli.demo import demo
from odradek.cli.dump_log import dump_log
from odradek.cli.groups import groups
from odradek.cli.leader_election import leader_election
from odradek.cli.log_dirs import log_dirs
from odradek.cli.offsets import offsets
from odradek.cli.perf import perf
from odradek.cli.produce import produce
from odradek.cli.producers import producers
from odradek.cli.quotas import quotas
from odradek.cli.reassign_partitions import reassign_partitions
from odradek.cli.records import records
from odradek.cli.serve import serve
from odradek.cli.topics import topics
from odradek.cli.transactions import transactions
from odradek.cli.users import users


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="odradek")
def cli() -> None:
    """odradek: a Kafka-compatible commit log."""


cli.add_command(acls)
cli.add_command(cluster)
cli.add_command(console)
cli.add_command(api_versions)
cli.add_command(cluster)
cli.add_command(configs)
cli.add_command(consume)
cli.add_command(demo)
cli.add_command(dump_log)
cli.add_command(groups)
cli.add_command(leader_election)
cli.add_command(log_dirs)
cli.add_command(offsets)
cli.add_command(perf)
cli.add_command(produce)
cli.add_command(producers)
cli.add_command(quotas)
cli.add_command(reassign_partitions)
cli.add_command(records)
cli.add_command(serve)
cli.add_command(topics)
cli.add_command(transactions)
cli.add_command(users)


def main(argv: list[str] | None = None) -> int:
    """Runs the CLI and returns its exit status."""
    try:
        cli.main(args=argv, prog_name="odradek", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("odradek: aborted", err=True)
        return 130
    except click.ClickException as error:
        click.echo(f"odradek: {error.format_message()}", err=True)
        return error.exit_code
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
