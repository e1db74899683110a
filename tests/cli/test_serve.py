"""``odradek serve`` as a process: the announcement line, clean stops on SIGTERM and SIGINT
(in-flight requests finished, clean-shutdown marker written, exit 0), data kept across
restarts, recovery after ``kill -9``, and one-line usage errors."""

from __future__ import annotations

import signal
import socket
import struct
import time
from pathlib import Path

import pytest
from tests._blocking_connection import BlockingConnection

from odradek.cli.main import main
from odradek.cli.serve import jaas_file_from_kafka_opts
from odradek.errors import ErrorCode
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.client_codec import decode_response, encode_request
from odradek.protocol.sasl import PlainClient

from .conftest import (
    ServeFactory,
    create_topic,
    fetch_request,
    fetch_values,
    produce,
    run_odradek,
)

TOPIC = "clicks"


def assert_one_line(stderr: str) -> str:
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("odradek: ")
    return lines[0]


def test_sigterm_stops_cleanly_and_a_restart_keeps_the_data(serve: ServeFactory) -> None:
    served = serve()
    assert served.line.startswith("odradek: broker 0 serving on 127.0.0.1:")
    assert not served.clean_shutdown_marker.exists()  # removed once the logs are loaded
    create_topic(served.bootstrap, TOPIC)
    assert produce(served.bootstrap, TOPIC, [b"a", b"b"]) == 0
    assert produce(served.bootstrap, TOPIC, [b"c"]) == 2

    started = time.monotonic()
    assert served.signal(signal.SIGTERM) == 0
    assert time.monotonic() - started < 5
    assert served.clean_shutdown_marker.exists()
    log = served.log()
    assert "SIGTERM received" in log
    assert "Traceback" not in log

    again = serve(served.data_dir)
    assert again.cluster_id == served.cluster_id
    assert not again.clean_shutdown_marker.exists()
    assert "(clean shutdown)" in again.log()
    assert fetch_values(again.bootstrap, TOPIC) == [b"a", b"b", b"c"]
    assert produce(again.bootstrap, TOPIC, [b"d"]) == 3
    assert again.signal(signal.SIGINT) == 0
    assert again.clean_shutdown_marker.exists()
    assert "Traceback" not in again.log()


def test_kill_9_then_restart_recovers_what_was_acknowledged(serve: ServeFactory) -> None:
    served = serve()
    create_topic(served.bootstrap, TOPIC)
    acked = [b"one", b"two", b"three"]
    for value in acked:
        produce(served.bootstrap, TOPIC, [value])
    served.kill()
    assert not served.clean_shutdown_marker.exists()

    again = serve(served.data_dir)
    assert "(unclean shutdown)" in again.log()
    assert fetch_values(again.bootstrap, TOPIC) == acked
    assert produce(again.bootstrap, TOPIC, [b"four"]) == 3
    assert again.signal(signal.SIGTERM) == 0
    assert again.clean_shutdown_marker.exists()


def test_sigterm_finishes_a_request_in_flight(serve: ServeFactory) -> None:
    served = serve()
    create_topic(served.bootstrap, TOPIC)
    produce(served.bootstrap, TOPIC, [b"x"])
    # A long-polling Fetch at the log end waits in the purgatory; SIGTERM must let it finish.
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
        fields = fetch_request(TOPIC, 1, max_wait=1_500, min_bytes=1)
        sock.sendall(encode_request(ApiKey.FETCH, 11, 9, "t", fields))
        # A round trip on another connection: the Fetch bytes were readable before it, so the
        # broker's event loop has read the Fetch once this answer is back.
        with BlockingConnection(served.bootstrap) as other:
            other.api_versions()
        served.process.send_signal(signal.SIGTERM)
        (size,) = struct.unpack(">i", _read_exactly(sock, 4))
        correlation_id, body = decode_response(ApiKey.FETCH, 11, _read_exactly(sock, size))
    assert correlation_id == 9
    [partition] = body["responses"][0]["partitions"]
    assert partition["error_code"] == ErrorCode.NONE
    assert partition["high_watermark"] == 1
    assert served.process.wait(15) == 0
    assert served.clean_shutdown_marker.exists()


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        assert chunk, "the broker closed the connection before answering"
        data += chunk
    return data


def test_a_second_signal_during_shutdown_changes_nothing(serve: ServeFactory) -> None:
    served = serve()
    served.process.send_signal(signal.SIGINT)
    assert served.signal(signal.SIGTERM) == 0
    assert served.clean_shutdown_marker.exists()


def test_the_broker_answers_over_uvloop(serve: ServeFactory) -> None:
    served = serve()
    with BlockingConnection(served.bootstrap) as connection:
        versions = connection.api_versions()
    assert versions[ApiKey.PRODUCE].max_version >= 7
    assert "Traceback" not in served.log()
    assert served.signal(signal.SIGTERM) == 0


def test_a_started_broker_freezes_its_objects_out_of_the_collector(serve: ServeFactory) -> None:
    served = serve()
    log = served.log()
    frozen = [line for line in log.splitlines() if "frozen out of the garbage collector" in line]
    assert len(frozen) == 1, log
    count = int(frozen[0].split("broker 0: ", 1)[1].split()[0])
    assert count > 10_000  # the imports alone; the rest of the process's life is not walked
    assert served.signal(signal.SIGTERM) == 0


# --- usage errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-o", "bogus.setting=1"], "odradek: unknown setting 'bogus.setting'"),
        (["--override", "num.partitions"], "expected NAME=VALUE, got 'num.partitions'"),
        (["-o", "num.partitions=zero"], "odradek: invalid value 'zero' for num.partitions"),
        (["--config", "/nonexistent/server.properties"], "cannot read broker config file"),
        (["--log-level", "LOUD"], "Invalid value for '--log-level'"),
        (["--port", "1"], "No such option"),
    ],
)
def test_usage_errors_are_one_line_with_status_2(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert main(["serve", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert message in assert_one_line(captured.err)


def test_a_bad_config_file_names_the_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    properties = tmp_path / "server.properties"
    properties.write_text("broker.id=0\nlog.dirs=/tmp/x\nx=1\n")
    assert main(["serve", "--config", str(properties)]) == 2
    assert assert_one_line(capsys.readouterr().err) == "odradek: unknown setting 'x'"


def test_the_process_reports_a_bad_setting_in_one_line() -> None:
    result = run_odradek("serve", "-o", "x=1")
    assert result.returncode == 2
    assert result.stdout == ""
    assert assert_one_line(result.stderr) == "odradek: unknown setting 'x'"


def test_a_port_in_use_is_one_line_and_status_1(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_odradek(
            "serve",
            "--log-level",
            "ERROR",
            "-o",
            f"listeners=PLAINTEXT://127.0.0.1:{port}",
            "-o",
            f"log.dirs={tmp_path / 'data'}",
        )
    assert result.returncode == 1
    assert result.stdout == ""
    line = assert_one_line(result.stderr)
    assert line.startswith("odradek: cannot start the broker: ")
    assert "address already in use" in line.lower()
    # The logs were loaded before the bind failed, so they were closed cleanly.
    assert (tmp_path / "data" / ".odradek_cleanshutdown").exists()


# --- a static JAAS file ---------------------------------------------------------------------

JAAS_FILE = """KafkaServer {
    org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";
};
sasl_plaintext.KafkaServer {
    org.apache.kafka.common.security.plain.PlainLoginModule required user_bob="bob-secret";
};
"""


def login(port: int, user: str, password: str) -> int:
    """Logs in with PLAIN on a new connection: the SaslAuthenticate error code."""
    with BlockingConnection(f"127.0.0.1:{port}", timeout_s=5) as connection:
        handshake = connection.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        assert handshake["error_code"] == 0
        token = PlainClient(user, password).first_token()
        answer = connection.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token})
        return int(answer["error_code"])


@pytest.mark.parametrize(
    ("kafka_opts", "expected"),
    [
        ("", None),
        ("-Xmx1G -Djava.security.auth.login.config=/etc/kafka/jaas.conf", "/etc/kafka/jaas.conf"),
        ("-Djava.security.auth.login.config='/a b.conf' -Dx=1", "/a b.conf"),
        (
            "-Djava.security.auth.login.config=/one -Djava.security.auth.login.config=/two",
            "/two",
        ),
    ],
)
def test_kafka_opts_names_the_jaas_file(kafka_opts: str, expected: str | None) -> None:
    assert jaas_file_from_kafka_opts({"KAFKA_OPTS": kafka_opts}) == expected


@pytest.mark.parametrize("how", ["--jaas-config", "KAFKA_OPTS"])
def test_an_unreadable_jaas_file_is_a_usage_error(
    how: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["serve"]
    if how == "--jaas-config":
        args += ["--jaas-config", "/nonexistent/jaas.conf"]
    else:
        monkeypatch.setenv("KAFKA_OPTS", "-Djava.security.auth.login.config=/nonexistent/jaas.conf")
    assert main(args) == 2
    line = assert_one_line(capsys.readouterr().err)
    assert "cannot read java.security.auth.login.config file /nonexistent/jaas.conf" in line


@pytest.mark.parametrize("how", ["--jaas-config", "KAFKA_OPTS"])
def test_plain_users_from_the_jaas_file_log_in(
    serve: ServeFactory, tmp_path: Path, how: str
) -> None:
    """The listener's own section (``sasl_plaintext.KafkaServer``) is the one read."""
    path = tmp_path / "kafka_server_jaas.conf"
    path.write_text(JAAS_FILE)
    settings = ("listeners=SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms=PLAIN")
    if how == "--jaas-config":
        served = serve(None, *settings, args=["--jaas-config", str(path)])
    else:
        opts = f"-Xms64m -Djava.security.auth.login.config={path}"
        served = serve(None, *settings, env={"KAFKA_OPTS": opts})
    assert login(served.port, "bob", "bob-secret") == 0
    assert login(served.port, "alice", "alice-secret") == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert served.signal(signal.SIGTERM) == 0
