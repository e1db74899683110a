"""The console in a real browser: Debian's Chromium, headless, driven by Playwright (one browser
for the module), against ``odradek serve`` and ``odradek console`` child processes.

What a person sees is asserted: the pages load with the cluster's values, a produced message
appears in the message browser (JSON structured, binary as hex), a group's lag shown on its page
drops as the group consumes — in offsets and in seconds —, the live chart draws a rate, and an
offset reset is a dry run first. Screenshots are kept under ``test-artifacts/console/`` (ignored
by git; ``ODRADEK_TEST_ARTIFACTS`` moves it).

Chromium comes from scripts/system-packages.txt (never from Playwright's own download): the
tests fail, saying so, when ``/usr/bin/chromium`` is missing — never a silent skip.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import playwright.sync_api as playwright_api
import pytest
from tests.console.conftest import Stack

from odradek.client import AdminClient, NewTopic, TopicPartition
from odradek.client.consumer import Consumer
from odradek.client.producer import Producer

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = (
    Path(
        os.environ.get(
            "ODRADEK_TEST_ARTIFACTS", Path(__file__).resolve().parents[2] / "test-artifacts"
        )
    )
    / "console"
)
WAIT_S = 20.0


@pytest.fixture(scope="module")
def browser() -> Iterator[playwright_api.Browser]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: scripts/bootstrap installs Debian's chromium")
    with playwright_api.sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: playwright_api.Browser) -> Iterator[playwright_api.Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        yield context.new_page()
    finally:
        context.close()


def shot(page: playwright_api.Page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def submit(page: playwright_api.Page, selector: str) -> None:
    """Clicks a submit button and waits for the page it loads."""
    with page.expect_navigation():
        page.click(selector)


def wait_for(condition: Callable[[], bool], what: str, timeout_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"


def test_pages_load_with_the_cluster_values(stack: Stack, page: playwright_api.Page) -> None:
    with AdminClient({"bootstrap.servers": stack.bootstrap}) as admin:
        cluster = admin.describe_cluster()
        admin.create_topics([NewTopic("browser-pages", 4, 1)]).all()
    page.goto(stack.url)
    assert page.inner_text("#cluster-id") == cluster.cluster_id
    assert page.inner_text("#controller") == str(cluster.controller_id)
    assert stack.bootstrap in page.inner_text("#brokers")
    shot(page, "brokers")

    page.click("text=Topics")
    row = page.locator("#topics tr", has_text="browser-pages")
    assert row.locator("td").nth(1).inner_text() == "4"
    shot(page, "topics")

    row.locator("a").click()
    assert page.inner_text("#topic-name") == "browser-pages"
    assert page.locator("#partitions tbody tr").count() == 4
    assert "cleanup.policy" in page.inner_text("#configs")
    shot(page, "topic")

    page.goto(stack.url + "topics/browser-pages/messages?offset=-4")
    assert (
        page.inner_text("#error-message")
        == "offset must be between 0 and " + str(2**63 - 1) + ", got -4"
    )
    page.goto(stack.url + "groups")
    assert page.locator("h1").inner_text() == "Consumer groups"


def test_a_produced_message_appears_in_the_message_browser(
    stack: Stack, page: playwright_api.Page
) -> None:
    with AdminClient({"bootstrap.servers": stack.bootstrap}) as admin:
        admin.create_topics([NewTopic("browser-messages", 2, 1)]).all()
    page.goto(stack.url + "topics/browser-messages/messages?partition=1")
    assert page.locator("tr.message").count() == 0

    with Producer({"bootstrap.servers": stack.bootstrap}) as producer:
        producer.send(
            "browser-messages",
            b'{"page": "/home", "user": {"id": 7}}',
            b"user-7",
            partition=1,
            headers=[("trace", b"abc"), ("blob", b"\x00\xff")],
        )
        producer.send("browser-messages", b"\xde\xad\xbe\xef", b"bin", partition=1)
        producer.flush()

    submit(page, "#browse-form button[type=submit]")  # the same query again
    rows = page.locator("tr.message")
    assert rows.count() == 2
    first = rows.nth(0)
    assert first.locator("td.key").inner_text().startswith("user-7")
    value = first.locator("td.value pre")
    assert value.get_attribute("data-kind") == "json"
    assert value.inner_text() == '{\n  "page": "/home",\n  "user": {\n    "id": 7\n  }\n}'
    headers = first.locator("td.headers").inner_text()
    assert "trace:\nabc\ntext, 3 B" in headers
    assert "00000000  00 ff" in headers
    second = rows.nth(1).locator("td.value pre")
    assert second.get_attribute("data-kind") == "binary"
    assert second.inner_text().startswith("00000000  de ad be ef")
    shot(page, "messages")

    # From a time: the first record at or after it.
    page.fill("input[name=timestamp]", "1970-01-01T00:00Z")
    submit(page, "#browse-form button[type=submit]")
    assert page.locator("tr.message").count() == 2


def _lag(page: playwright_api.Page) -> tuple[int, int]:
    lag = page.locator("#total-lag")
    return int(lag.get_attribute("data-lag") or "-1"), int(
        page.locator("#total-lag-time").get_attribute("data-lag-ms") or "-1"
    )


def test_a_groups_lag_drops_as_it_consumes(stack: Stack, page: playwright_api.Page) -> None:
    topic, group = "browser-lag", "browser-group"
    with AdminClient({"bootstrap.servers": stack.bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, 1, 1)]).all()
    # 30 records stamped 2, 1.5 and 1 minutes ago (10 each): the lag in time is the age of
    # the next unconsumed one, so it steps down as the group consumes.
    now_ms = int(time.time() * 1_000)
    stamps = [now_ms - 120_000] * 10 + [now_ms - 90_000] * 10 + [now_ms - 60_000] * 10
    with Producer({"bootstrap.servers": stack.bootstrap}) as producer:
        for index, stamp in enumerate(stamps):
            producer.send(topic, f"record {index}".encode(), timestamp_ms=stamp)
        producer.flush()

    consumer = Consumer(
        bootstrap_servers=stack.bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
    )
    try:
        consumer.subscribe([topic])

        def consume_ten() -> None:
            got = 0
            deadline = time.monotonic() + WAIT_S
            while got < 10 and time.monotonic() < deadline:
                got += len(consumer.poll(500, max_records=10 - got))
            assert got == 10
            consumer.commit_sync()

        consume_ten()
        page.goto(stack.url + f"group?id={group}")
        seen = [_lag(page)]
        shot(page, "group-lag-1")
        for step in (2, 3):
            # The page is not reloaded: its script polls the group's lag.
            consume_ten()
            wait_for(lambda: _lag(page)[0] < seen[-1][0], "the shown lag to drop")
            seen.append(_lag(page))
            shot(page, f"group-lag-{step}")
        assert page.inner_text("#group-state") == "Stable"
        assert "browser-lag" in page.inner_text("#members")
        assert page.inner_text("#lag td[data-field=lag]") == "0"
    finally:
        consumer.close(timeout_ms=5_000)
    # In offsets: 20, 10, 0. In time: the next record is 1.5 min old, then 1 min, then none
    # (the page updated itself twice).
    assert [offsets for offsets, _ in seen] == [20, 10, 0]
    elapsed_ms = int(time.time() * 1_000) - now_ms
    assert 90_000 <= seen[0][1] <= 90_000 + elapsed_ms
    assert 60_000 <= seen[1][1] <= 60_000 + elapsed_ms
    assert seen[2][1] == 0
    assert page.inner_text("#total-lag-time") == "0 s"


def test_reset_offsets_is_a_dry_run_first(stack: Stack, page: playwright_api.Page) -> None:
    topic, group = "browser-reset", "browser-reset-group"
    with AdminClient({"bootstrap.servers": stack.bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, 2, 1)]).all()
        with Producer({"bootstrap.servers": stack.bootstrap}) as producer:
            for index in range(6):
                producer.send(topic, b"x", partition=index % 2)
            producer.flush()
        admin.alter_group_offsets(
            group, {TopicPartition(topic, 0): 3, TopicPartition(topic, 1): 3}
        ).all()
    page.goto(stack.url + f"group?id={group}")
    assert _lag(page)[0] == 0
    page.fill("#reset-offsets input[name=value]", "-2")
    page.select_option("#reset-offsets select[name=strategy]", "shift")
    submit(page, "#reset-offsets button[value=no]")
    assert page.inner_text("#plan-title") == "Dry run: nothing changed"
    assert [c.inner_text() for c in page.locator("#plan tbody tr td:nth-child(4)").all()] == [
        "1",
        "1",
    ]
    assert _lag(page)[0] == 0
    shot(page, "reset-dry-run")
    submit(page, "#reset-offsets button[value=yes]")
    assert page.inner_text("#plan-title") == "Offsets reset"
    assert _lag(page)[0] == 4


def test_the_throughput_chart_shows_a_rate(stack: Stack, page: playwright_api.Page) -> None:
    topic = "browser-rate"
    with AdminClient({"bootstrap.servers": stack.bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, 1, 1)]).all()
    page.goto(stack.url + f"topics/{topic}")
    rate = page.locator(".rate-value")
    wait_for(lambda: rate.get_attribute("data-samples") is not None, "a first rate")
    assert rate.inner_text() == "0.0"
    with Producer({"bootstrap.servers": stack.bootstrap}) as producer:
        for _ in range(500):
            producer.send(topic, b"y")
        producer.flush()
    wait_for(lambda: re.fullmatch(r"[1-9]\d*\.\d", rate.inner_text()) is not None, "a rate > 0")
    assert page.locator("svg.throughput polyline").count() == 1
    shot(page, "throughput")


def test_topic_forms_create_alter_and_delete_with_a_confirmation(
    stack: Stack, page: playwright_api.Page
) -> None:
    page.goto(stack.url + "topics")
    page.fill("#create-topic input[name=name]", "browser-forms")
    page.fill("#create-topic input[name=partitions]", "2")
    submit(page, "#create-topic button[type=submit]")
    assert page.inner_text(".notice") == "topic browser-forms created"
    assert page.locator("#partitions tbody tr").count() == 2

    page.fill("#alter-config input[name=name]", "retention.ms")
    page.fill("#alter-config input[name=value]", "3600000")
    submit(page, "#alter-config button[value=set]")
    assert page.inner_text(".notice") == "retention.ms set"
    row = page.locator("#configs tr").filter(
        has=page.get_by_role("cell", name="retention.ms", exact=True)
    )
    assert row.locator("td.value").inner_text() == "3600000"
    assert "DYNAMIC_TOPIC_CONFIG" in row.inner_text()

    # Dismissing the confirmation keeps the topic; accepting it deletes the topic.
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.click("#delete-topic button")
    assert page.inner_text("#topic-name") == "browser-forms"
    page.once("dialog", lambda dialog: dialog.accept())
    submit(page, "#delete-topic button")
    assert page.inner_text(".notice") == "topic browser-forms deleted"
    shot(page, "topic-deleted")
    with AdminClient({"bootstrap.servers": stack.bootstrap}) as admin:
        assert "browser-forms" not in admin.list_topics()
