"""The console in front of a SASL listener: users log in with the broker's own SASL users,
each user's pages act as that user (the broker's ACLs decide what they see), a wrong password
is refused with one line, logout ends the session. HTTP tests, then one test in Debian's
Chromium (Playwright) with screenshots under ``test-artifacts/console/``.

The broker is embedded (authorizer on; ``User:admin`` and the PLAINTEXT listener's
``User:ANONYMOUS`` are super users); the console is ``odradek console --command-config``, a
child process stopped by PID.
"""

from __future__ import annotations

import re
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import playwright.sync_api as playwright_api
import pytest
from tests.console.test_browser import CHROMIUM, shot, submit

from odradek import Broker
from odradek.cli.main import main
from odradek.client import AdminClient, NewTopic
from odradek.testing.certificates import make_certificates
from odradek.testing.secure_broker import PLAIN_PASSWORD, PLAIN_USER, broker_settings
from odradek.testing.serve import stop_process

_SERVING = re.compile(
    r"odradek console: serving (http://127\.0\.0\.1:\d+/) "
    r"\(bootstrap \S+, users log in with PLAIN\)"
)


@dataclass(frozen=True)
class Secured:
    url: str
    log: Path

    def post(
        self, path: str, form: dict[str, str], cookie: str = ""
    ) -> tuple[int, str, dict[str, str]]:
        """POSTs a form (as this console's own page would): status, body, response headers."""
        data = urllib.parse.urlencode(form).encode()
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        if cookie:
            headers["Cookie"] = cookie
        return _open(self.url.rstrip("/") + path, data, headers)

    def get(self, path: str, cookie: str = "") -> tuple[int, str, dict[str, str]]:
        return _open(self.url.rstrip("/") + path, None, {"Cookie": cookie} if cookie else {})


def _open(url: str, data: bytes | None, headers: dict[str, str]) -> tuple[int, str, dict[str, str]]:
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(
            urllib.request.Request(url, data=data, headers=headers), timeout=30
        ) as answer:
            return answer.status, answer.read().decode(), dict(answer.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(), dict(error.headers)


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    root = tmp_path_factory.mktemp("console-login")
    certificates = make_certificates(tmp_path_factory.mktemp("console-login-certificates"))
    config = {
        **broker_settings(certificates),
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:admin;User:ANONYMOUS",
        "num.partitions": "1",
    }
    with Broker(config=config) as broker:
        plaintext = f"127.0.0.1:{broker.listener_port('PLAINTEXT')}"
        with AdminClient({"bootstrap.servers": plaintext}) as admin:
            admin.create_topics(
                [NewTopic("visible-orders", 1, 1), NewTopic("hidden-payroll", 1, 1)]
            ).all()
        assert main(
            ["acls", "add", "--bootstrap-server", plaintext,
             "--allow-principal", f"User:{PLAIN_USER}",
             "--operation", "Describe", "--topic", "visible-orders"]
        ) == 0  # fmt: skip
        command_config = root / "console.properties"
        command_config.write_text(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
            "sasl.username=admin\nsasl.password=admin-secret\n"
        )
        log_path = root / "console.log"
        with log_path.open("w") as log:
            console = subprocess.Popen(  # our interpreter running our own CLI
                [sys.executable, "-m", "odradek.cli.main", "console", "--port", "0",
                 "--bootstrap-server", f"127.0.0.1:{broker.listener_port('SASL_PLAINTEXT')}",
                 "--command-config", str(command_config)],
                stdout=subprocess.PIPE, stderr=log, text=True,
            )  # fmt: skip
            try:
                assert console.stdout is not None
                line = console.stdout.readline()
                match = _SERVING.search(line)
                assert match is not None, f"console did not start: {line!r}; {log_path.read_text()}"
                yield Secured(match[1], log_path)
            finally:
                stop_process(console, 15.0)
                if console.stdout is not None:
                    console.stdout.close()


def _login(
    secured: Secured, user: str, password: str, next_path: str = "/topics"
) -> tuple[int, str, dict[str, str]]:
    return secured.post("/login", {"username": user, "password": password, "next": next_path})


def _cookie(headers: dict[str, str]) -> str:
    value = headers["set-cookie"] if "set-cookie" in headers else headers["Set-Cookie"]
    return value.split(";")[0]


def test_every_page_needs_a_login(secured: Secured) -> None:
    status, _body, headers = secured.get("/topics?x=1")
    assert status == 303
    assert headers["location"] == "/login?next=%2Ftopics%3Fx%3D1"
    status, body, _headers = secured.get("/api/offsets")
    assert status == 401
    assert "log in first" in body
    status, body, _headers = secured.get("/login")
    assert status == 200
    assert 'name="password"' in body
    status, _body, _headers = secured.get("/topics", cookie="odradek_session=forged.0000")
    assert status == 303


def test_a_wrong_password_is_refused_with_one_line(secured: Secured) -> None:
    status, body, headers = _login(secured, PLAIN_USER, "not-the-password")
    assert status == 401
    assert "set-cookie" not in {k.lower() for k in headers}
    [line] = re.findall(r'id="login-error">([^<]*)<', body)
    assert "wrong username or password" in line
    assert PLAIN_USER in line.replace("&#39;", "'")


def test_the_user_sees_what_the_acls_allow_and_logout_ends_the_session(secured: Secured) -> None:
    status, _body, headers = _login(secured, PLAIN_USER, PLAIN_PASSWORD, next_path="/topics")
    assert status == 303
    assert headers["location"] == "/topics"
    set_cookie = headers.get("set-cookie") or headers["Set-Cookie"]
    assert "httponly" in set_cookie.lower()
    assert "samesite=strict" in set_cookie.lower()
    cookie = _cookie(headers)
    status, body, _headers = secured.get("/topics", cookie=cookie)
    assert status == 200
    assert "visible-orders" in body
    assert "hidden-payroll" not in body
    assert f'id="user">{PLAIN_USER}<' in body
    status, _body, headers = secured.post("/logout", {}, cookie=cookie)
    assert status == 303
    assert headers["location"].startswith("/login")
    status, _body, _headers = secured.get("/topics", cookie=cookie)
    assert status == 303  # the old cookie names no session any more


def test_a_login_post_from_another_site_is_refused(secured: Secured) -> None:
    data = urllib.parse.urlencode({"username": PLAIN_USER, "password": PLAIN_PASSWORD}).encode()
    status, _body, _headers = _open(
        secured.url + "login",
        data,
        {"Content-Type": "application/x-www-form-urlencoded", "Origin": "http://evil.example"},
    )
    assert status == 403


def test_the_login_does_not_redirect_off_site(secured: Secured) -> None:
    status, _body, headers = _login(
        secured, PLAIN_USER, PLAIN_PASSWORD, next_path="//evil.example/"
    )
    assert status == 303
    assert headers["location"] == "/"


def test_in_the_browser_a_user_logs_in_sees_one_topic_and_logs_out(secured: Secured) -> None:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: scripts/bootstrap installs Debian's chromium")
    with playwright_api.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            page.goto(secured.url + "topics")
            assert page.url.startswith(secured.url + "login")
            page.fill("#username", PLAIN_USER)
            page.fill("#password", "wrong")
            submit(page, "button:has-text('Log in')")
            assert "wrong username or password" in page.inner_text("#login-error")
            shot(page, "login-refused")
            page.fill("#password", PLAIN_PASSWORD)
            submit(page, "button:has-text('Log in')")
            assert page.url == secured.url + "topics"
            assert page.inner_text("#user") == PLAIN_USER
            topics = page.inner_text("#topics")
            assert "visible-orders" in topics
            assert "hidden-payroll" not in topics
            shot(page, "login-topics-of-one-user")
            submit(page, "button:has-text('Log out')")
            assert page.url.startswith(secured.url + "login")
            page.goto(secured.url + "topics")
            assert page.url.startswith(secured.url + "login")
        finally:
            browser.close()
