"""The console over HTTP against a real broker: status codes, escaping, forms, refusals.

No browser here (``test_browser`` drives Chromium): these check what every response is, for
inputs a browser would not send.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.parse

from tests.console.conftest import Stack, request

from odradek.client import AdminClient, NewTopic, TopicPartition
from odradek.client.producer import Producer


def _post(stack: Stack, path: str, fields: dict[str, str], **headers: str) -> tuple[int, str]:
    body = urllib.parse.urlencode(fields).encode()
    sent = {"Content-Type": "application/x-www-form-urlencoded", **headers}
    return request(stack.url.rstrip("/") + path, body, sent)


def test_pages_answer_and_name_the_cluster(stack: Stack) -> None:
    status, page = stack.get("/")
    assert status == 200
    assert stack.bootstrap in page  # the broker's address in its row
    assert ">controller<" in page
    for path in ("/topics", "/groups", "/static/console.js", "/static/console.css"):
        assert stack.get(path)[0] == 200, path


def test_bad_input_is_one_clear_line_and_a_4xx(stack: Stack) -> None:
    with AdminClient({"bootstrap.servers": stack.bootstrap}) as admin:
        admin.create_topics([NewTopic("http-bad", 2, 1)]).all()
    cases = {
        "/topics/no-such-topic": (404, "no topic &#39;no-such-topic&#39;"),
        "/topics/no-such-topic/messages": (404, "no topic"),
        "/topics/http-bad/messages?offset=abc": (400, "offset must be a whole number"),
        "/topics/http-bad/messages?offset=5": (400, "partition 0 holds no records"),
        "/topics/http-bad/messages?partition=9": (400, "between 0 and 1, got 9"),
        "/topics/http-bad/messages?timestamp=soon": (400, "a time is milliseconds"),
        "/topics/http-bad/messages?limit=100000": (400, "limit must be between 1 and 500"),
        "/group?id=nobody-here": (404, "no consumer group"),
        "/group": (400, "a group id is required"),
        "/no/such/page": (404, "no such page"),
    }
    for path, (status, text) in cases.items():
        got, page = stack.get(path)
        assert (got, text in page) == (status, True), (path, got, page[-600:])
        assert "Traceback" not in page
    status, body = stack.get("/api/offsets?topic=no-such-topic")
    assert (status, json.loads(body)) == (404, {"error": "no topic 'no-such-topic'"})


def test_user_data_is_escaped_everywhere(stack: Stack) -> None:
    evil = '<img src=x onerror="alert(1)">'
    with Producer({"bootstrap.servers": stack.bootstrap}) as producer:
        producer.send("http-xss", evil.encode(), evil.encode(), headers=[(evil, evil.encode())])
        producer.flush()
    status, page = stack.get("/topics/http-xss/messages")
    assert status == 200
    assert "<img" not in page
    # The key, the value, the header's name and its value.
    assert page.count("&lt;img src=x onerror=&#34;alert(1)&#34;&gt;") == 4
    # A group id is user data too, shown back on its error page.
    status, page = stack.get("/group?id=" + urllib.parse.quote(evil))
    assert status == 404
    assert "<img" not in page


def test_binary_values_are_hex_and_json_is_structured(stack: Stack) -> None:
    with Producer({"bootstrap.servers": stack.bootstrap}) as producer:
        producer.send("http-bytes", b"\xff\xfe\x00raw", b"k1")
        producer.send("http-bytes", b'{"user": "ann", "n": [1, 2]}', b"k2")
        producer.flush()
    status, page = stack.get("/topics/http-bytes/messages")
    assert status == 200
    assert "00000000  ff fe 00 72 61 77" in page
    assert '<pre class="json" data-kind="json">{\n  &#34;user&#34;: &#34;ann&#34;,' in page


def test_topic_forms_create_alter_and_delete(stack: Stack) -> None:
    origin = {"Origin": stack.url.rstrip("/")}
    status, _ = _post(stack, "/topics", {"name": "http-made", "partitions": "3"}, **origin)
    assert status == 303
    status, page = stack.get("/topics/http-made")
    assert status == 200
    assert page.count('class="num log-end-offset"') == 3
    status, _ = _post(
        stack,
        "/topics/http-made/config",
        {"name": "retention.ms", "value": "12345", "action": "set"},
        **origin,
    )
    assert status == 303
    page = stack.get("/topics/http-made")[1]
    assert '<td>retention.ms</td><td class="value">12345</td><td>DYNAMIC_TOPIC_CONFIG</td>' in page
    status, page = _post(stack, "/topics", {"name": "http-made"}, **origin)
    assert (status, "TOPIC_ALREADY_EXISTS" in page) == (400, True)
    status, page = _post(stack, "/topics", {"name": "bad/name"}, **origin)
    assert (status, "a topic name is 1 to 249 characters" in page) == (400, True)
    status, _ = _post(stack, "/topics/http-made/delete", {}, **origin)
    assert status == 303
    with AdminClient({"bootstrap.servers": stack.bootstrap}) as admin:
        assert "http-made" not in admin.list_topics()


def test_a_form_posted_from_another_site_is_refused(stack: Stack) -> None:
    status, page = _post(stack, "/topics", {"name": "http-csrf"}, Origin="http://attacker.example")
    assert (status, "a form posted from another site is refused" in page) == (403, True)
    status, _ = _post(stack, "/topics", {"name": "http-csrf"}, **{"Sec-Fetch-Site": "cross-site"})
    assert status == 403
    with AdminClient({"bootstrap.servers": stack.bootstrap}) as admin:
        assert "http-csrf" not in admin.list_topics()


def test_a_second_console_on_a_port_in_use_is_one_line_and_exit_1(stack: Stack) -> None:
    port = urllib.parse.urlsplit(stack.url).port
    command = [sys.executable, "-m", "odradek.cli.main", "console"]
    command += ["--bootstrap-server", stack.bootstrap, "--port", str(port)]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.startswith(f"odradek: cannot listen on 127.0.0.1:{port}: ")
    assert len(done.stderr.strip().splitlines()) == 1


def test_the_live_lag_answer_is_json_with_its_text(stack: Stack) -> None:
    with AdminClient({"bootstrap.servers": stack.bootstrap}) as admin:
        admin.create_topics([NewTopic("http-lag", 1, 1)]).all()
        with Producer({"bootstrap.servers": stack.bootstrap}) as producer:
            for index in range(5):  # offset n stamped n+1 s after the epoch
                producer.send("http-lag", b"v", timestamp_ms=(index + 1) * 1_000)
            producer.flush()
        admin.alter_group_offsets("http-lag-group", {TopicPartition("http-lag", 0): 2}).all()
    status, body = stack.get("/api/group?id=http-lag-group")
    answer = json.loads(body)
    assert status == 200
    assert (answer["state"], answer["lag"], answer["lag_text"]) == ("Empty", 3, "3")
    assert answer["lag_ms"] > 1_700_000_000_000  # the next record is from 1970
    assert answer["lag_time_text"].endswith(" h")
    [row] = answer["partitions"]
    assert (row["key"], row["committed"], row["log_end_offset"], row["lag"]) == (
        "http-lag/0",
        "2",
        "5",
        "3",
    )
    # The next unconsumed record is the one at the committed offset, 2.
    assert row["next_timestamp"] == "1970-01-01T00:00:03.000Z"
    status, body = stack.get("/api/group?id=nobody")
    assert (status, json.loads(body)) == (404, {"error": "no consumer group 'nobody'"})


def test_a_request_for_another_host_name_is_refused(stack: Stack) -> None:
    """A page whose name was re-pointed at 127.0.0.1 (DNS rebinding) sends its own name."""
    port = urllib.parse.urlsplit(stack.url).port
    status, body = request(stack.url + "topics", headers={"Host": f"attacker.example:{port}"})
    assert (status, body) == (400, "Invalid host header")
    status, _ = request(stack.url + "topics", headers={"Host": f"localhost:{port}"})
    assert status == 200
