"""``odradek serve``: run one broker in the foreground until SIGTERM or SIGINT.

    odradek serve [--config server.properties] [--override NAME=VALUE ...]
                  [--jaas-config FILE] [--log-level LEVEL]

Settings come from the properties file (Kafka's names, ``BrokerConfig.from_properties``), then
the ``--override``/``-o`` values, later winning. A static JAAS file (PLAIN's users in a
``KafkaServer`` or ``<listener>.KafkaServer`` section) is named by ``--jaas-config`` or, as
Kafka's start script passes it, by ``-Djava.security.auth.login.config=FILE`` in the
``KAFKA_OPTS`` environment variable; it becomes the setting
``java.security.auth.login.config``, which ``--jaas-config`` sets over any other source and
``KAFKA_OPTS`` only when neither the file nor an override sets it.

The broker runs on the main thread's event loop (uvloop when it is installed) and logs to
stderr; once it is up, the objects alive are frozen out of the garbage collector's passes
(``odradek.broker.gc_freeze``); once it accepts connections it prints one line on stdout::

    odradek: broker 0 serving on 127.0.0.1:9092 (cluster <id>)

with the bound port (a ``listeners`` port of 0 picks a free one, so scripts read it here).

Contract:

- SIGTERM or SIGINT stop the broker cleanly: stop accepting, finish the requests in flight,
  flush and close the logs and write the clean-shutdown marker; then exit 0. A signal that
  arrives while the broker starts (log recovery) stops it as soon as it is up.
- A bad setting, file or ``--override`` is a usage error: one line on stderr, exit 2.
- A broker that cannot start (port in use, unusable log directory, an unreachable
  ``zookeeper.connect``, a ``broker.id`` already registered), or that fails while closing its
  logs, prints one line, exit 1 (the log directory then has no clean-shutdown marker, so the
  next start recovers it).
- A broker whose ZooKeeper session expires (paused or cut off for longer than
  ``zookeeper.session.timeout.ms``) must not go on serving as if nothing happened: its
  registration is gone and others may have taken its roles. It stops cleanly (logs closed with
  the marker) and rejoins the cluster, as a Kafka broker re-registers: it starts again on the
  same listener ports with a new session, retrying every ``REJOIN_BACKOFF_S`` (growing to
  ``REJOIN_MAX_BACKOFF_S``) while ZooKeeper cannot be reached, until it is registered again or
  a stop signal comes; the controller then makes it a follower of its partitions, which
  truncate to their leaders where they diverged.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import shlex
import signal
import sys
from collections.abc import Mapping
from pathlib import Path

import click

from odradek.broker.allocator import retain_freed_memory
from odradek.broker.app import BrokerApp
from odradek.broker.config import BrokerConfig
from odradek.broker.gc_freeze import freeze_start_up, thaw
from odradek.broker.security.listeners import JAAS_FILE_SETTING
from odradek.errors import ConfigError, OdradekError

logger = logging.getLogger(__name__)

LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
#: How long a broker whose session expired waits before each attempt to rejoin (doubling).
REJOIN_BACKOFF_S = 0.5
REJOIN_MAX_BACKOFF_S = 10.0


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A new event loop: uvloop's when installed, else asyncio's (the only uvloop import)."""
    try:
        import uvloop  # noqa: PLC0415 (optional dependency, kept behind this one function)
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def parse_overrides(values: tuple[str, ...], option: str) -> dict[str, str]:
    """``NAME=VALUE`` strings to a mapping (later wins); the value may contain ``=``.

    Raises:
        click.BadParameter: an entry without ``=`` or with an empty name.
    """
    settings: dict[str, str] = {}
    for value in values:
        name, sep, setting = value.partition("=")
        if not sep or not name.strip():
            raise click.BadParameter(f"expected NAME=VALUE, got {value!r}", param_hint=option)
        settings[name.strip()] = setting.strip()
    return settings


def jaas_file_from_kafka_opts(environ: Mapping[str, str]) -> str | None:
    """The JAAS file ``KAFKA_OPTS`` names with ``-Djava.security.auth.login.config=FILE``
    (the last one wins, as in Java), or None.

    Raises:
        click.BadParameter: ``KAFKA_OPTS`` cannot be split as a shell would.
    """
    try:
        words = shlex.split(environ.get("KAFKA_OPTS", ""))
    except ValueError as error:
        raise click.BadParameter(f"cannot parse KAFKA_OPTS: {error}") from None
    flag = f"-D{JAAS_FILE_SETTING}="
    found = [word[len(flag) :] for word in words if word.startswith(flag)]
    return found[-1] if found else None


@click.command("serve")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help="A server.properties file (Kafka's setting names). Default: Kafka's defaults.",
)
@click.option(
    "--override",
    "-o",
    "overrides",
    multiple=True,
    metavar="NAME=VALUE",
    help="Set one broker setting, after the file (repeatable).",
)
@click.option(
    "--jaas-config",
    "jaas_config",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help="A static JAAS file with a KafkaServer section (PLAIN's users). Default: the "
    "-Djava.security.auth.login.config in KAFKA_OPTS.",
)
@click.option(
    "--log-level",
    type=click.Choice(LOG_LEVELS, case_sensitive=False),
    default="info",
    show_default=True,
    help="Log level of the messages written to stderr.",
)
def serve(
    config_path: Path | None, overrides: tuple[str, ...], jaas_config: Path | None, log_level: str
) -> None:
    """Run a broker until SIGTERM or SIGINT (Ctrl-C), then shut it down cleanly."""
    settings = parse_overrides(overrides, "'--override' / '-o'")
    if jaas_config is not None:
        settings[JAAS_FILE_SETTING] = str(jaas_config)
    from_environment = jaas_file_from_kafka_opts(os.environ)
    try:
        config = BrokerConfig.from_properties(config_path, settings)
        if from_environment is not None and JAAS_FILE_SETTING not in dict(config.originals):
            settings[JAAS_FILE_SETTING] = from_environment
            config = BrokerConfig.from_properties(config_path, settings)
    except ConfigError as error:
        raise click.UsageError(str(error)) from None
    logging.basicConfig(stream=sys.stderr, level=log_level.upper(), format=LOG_FORMAT, force=True)
    retain_freed_memory()  # this process is the broker's own: reuse request buffers
    loop = new_event_loop()
    try:
        loop.run_until_complete(_serve(BrokerApp(config)))
    finally:
        loop.close()


async def _serve(app: BrokerApp) -> None:
    """Starts ``app``, announces it, serves until a stop signal (rejoining the cluster each
    time its ZooKeeper session expires), stops it."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, _on_signal, signum, stop)
    try:
        await _start(app)
        _freeze(app)
        ctx = app.ctx
        assert ctx is not None
        click.echo(
            f"odradek: broker {ctx.broker_id} serving on {ctx.host}:{ctx.port} "
            f"(cluster {ctx.cluster_id})"
        )
        sys.stdout.flush()
        while True:
            fatal = asyncio.ensure_future(app.wait_fatal())
            stopped = asyncio.ensure_future(stop.wait())
            await asyncio.wait({fatal, stopped}, return_when=asyncio.FIRST_COMPLETED)
            fatal.cancel()
            stopped.cancel()
            try:
                await app.stop()
            except (OdradekError, OSError) as error:
                raise click.ClickException(f"the broker did not stop cleanly: {error}") from None
            if stop.is_set():
                return
            thaw()  # the stopped broker's objects may be collected now
            rejoined = await _rejoin(_pinned(app.config, app.port), stop)
            if rejoined is None:
                return
            app = rejoined
            _freeze(app)
    finally:
        for signum in STOP_SIGNALS:
            loop.remove_signal_handler(signum)


async def _rejoin(config: BrokerConfig, stop: asyncio.Event) -> BrokerApp | None:
    """Starts a broker on ``config`` again after its session expired, retrying with a growing
    backoff; ``None`` if a stop signal came first."""
    backoff = REJOIN_BACKOFF_S
    while True:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), backoff)
        if stop.is_set():
            return None
        logger.warning("broker %d rejoins the cluster", config.broker_id)
        app = BrokerApp(config)
        try:
            await app.start()
        except (OdradekError, OSError) as error:
            logger.warning("broker %d could not rejoin yet: %s", config.broker_id, error)
            await _abandon(app)
            backoff = min(backoff * 2, REJOIN_MAX_BACKOFF_S)
            continue
        return app


def _pinned(config: BrokerConfig, port: int) -> BrokerConfig:
    """``config`` with its first listener (and the advertised listener of that name) on
    ``port`` where they asked for an ephemeral one: a broker that rejoins keeps its address."""
    first = config.listeners[0]
    if first.port != 0:
        return config
    return dataclasses.replace(
        config,
        listeners=(dataclasses.replace(first, port=port), *config.listeners[1:]),
        advertised_listeners=tuple(
            dataclasses.replace(listener, port=port)
            if listener.name == first.name and listener.port == 0
            else listener
            for listener in config.advertised_listeners
        ),
    )


def _freeze(app: BrokerApp) -> None:
    """Freezes the objects of a started broker out of the garbage collector's passes
    (``odradek.broker.gc_freeze``)."""
    frozen = freeze_start_up()
    logger.info(
        "broker %d: %d start-up objects frozen out of the garbage collector's passes",
        app.config.broker_id,
        frozen,
    )


def _on_signal(signum: signal.Signals, stop: asyncio.Event) -> None:
    if not stop.is_set():
        logger.info("%s received: shutting down", signum.name)
    stop.set()


async def _start(app: BrokerApp) -> None:
    """``app.start``, with a failure turned into one line (exit 1).

    The logs are closed cleanly (marker written) only when the failure came after they were
    loaded and checked, i.e. once the server exists; a failure during loading leaves the log
    directory as it was, so the next start recovers it again.
    """
    try:
        await app.start()
    except (OdradekError, OSError) as error:
        await _abandon(app)
        raise click.ClickException(f"cannot start the broker: {error}") from None


async def _abandon(app: BrokerApp) -> None:
    """Undoes a failed ``app.start``: the logs are closed cleanly only once the server
    exists (they were loaded and checked); before that only the store is closed."""
    if app.server is not None:
        await app.stop()
    elif app.store is not None:
        app.store.close()
