"""The console's web application: routes, templates and error pages (Starlette and Jinja2, the
only importers of either).

Pages (GET): ``/`` the brokers and the controller; ``/topics`` the topics and a form to create
one; ``/topics/{topic}`` partitions, offsets, sizes, configs, forms to alter a config or delete
the topic; ``/topics/{topic}/messages`` the message browser; ``/groups`` the consumer groups;
``/group?id=G`` a group's members and lag, its last rebalances and their causes (read from
its coordinator's HTTP endpoint, ``console.broker_http``), and a form to reset its offsets (a
dry run unless asked otherwise). ``/api/offsets[?topic=T]`` answers log end offsets as JSON
for the live throughput charts, ``/api/group?id=G`` a group's lag for its page's live table
(``static/console.js`` polls the first every second, the second every two).

The rules kept:

- Everything shown is escaped (Jinja2 autoescape; the script writes numbers with
  ``textContent``): topic names, group ids and record contents are user data.
- Bad input or a missing topic or group is a page (or a JSON body) with one clear line and a
  4xx status; a broker that cannot be reached is a 503; an unexpected failure is a 500 page
  naming the exception type — never a traceback.
- A form post from another site is refused (403): the ``Origin`` header, when sent, must be
  this console's own, and ``Sec-Fetch-Site`` must not be ``cross-site``.
- A request whose ``Host`` is not one of ``allowed_hosts`` is refused (400): a page of another
  site whose name was re-pointed at this address (DNS rebinding) cannot read or post here.
- Broker calls block, so each runs on a worker thread (``run_in_threadpool``).
- When the console reaches the broker over a SASL listener (``sessions`` given), every page
  but ``/login`` needs a logged-in user: ``GET /login`` shows the form, ``POST /login`` checks
  the username and password by authenticating to the broker with them (a refusal is the form
  again, 401, with one line), ``POST /logout`` ends the session. Each user's pages are served
  by a ``ConsoleService`` logged in as that user, so the broker's ACLs apply. The session
  cookie is HttpOnly and SameSite=Strict and holds only a signed random id; login and logout
  are form posts under the same-origin check as every other.
"""

from __future__ import annotations

import logging
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from typing import Any, Final, TypeVar

import jinja2
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from odradek.console.inputs import (
    ConsoleInputError,
    ConsoleNotFoundError,
    parse_reset_spec,
)
from odradek.console.render import format_bytes, format_duration_ms
from odradek.console.service import ConsoleService
from odradek.console.sessions import ConsoleLoginError, SessionStore
from odradek.errors import KafkaError, KafkaTimeoutError, OdradekError

__all__ = ["create_app"]

log = logging.getLogger(__name__)

#: The cookie naming a logged-in user's session (``sessions.SessionStore``).
SESSION_COOKIE: Final = "odradek_session"


class LoginRequiredError(Exception):
    """The request needs a logged-in user and has none: a page redirects to the login, an
    ``/api/`` call answers 401."""


T = TypeVar("T")

#: The largest form body read.
MAX_FORM_BYTES: Final = 65_536
#: The files served under /static/, with their media types.
STATIC_FILES: Final = {
    "console.css": "text/css; charset=utf-8",
    "console.js": "text/javascript; charset=utf-8",
}
#: Kafka errors that mean the broker could not be reached in time, not that it refused.
_UNREACHABLE: Final = ("NETWORK_EXCEPTION", "REQUEST_TIMED_OUT", "COORDINATOR_NOT_AVAILABLE")


def _segment(value: object) -> str:
    """A value quoted for one URL path segment or query value (``/`` quoted too)."""
    return urllib.parse.quote(str(value), safe="")


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("odradek.console", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["size"] = format_bytes
    env.filters["duration"] = format_duration_ms
    env.filters["q"] = _segment
    env.filters["dash"] = lambda value: "-" if value is None else value
    env.filters["ids"] = lambda values: ", ".join(str(v) for v in values) or "-"
    return env


class _Pages:
    """The route handlers, over one ``ConsoleService``."""

    def __init__(self, service: ConsoleService, sessions: SessionStore | None) -> None:
        self.service = service
        self.sessions = sessions
        self.env = _environment()

    # ------------------------------------------------------------------ sessions

    def _service(self, request: Request) -> ConsoleService:
        """The service acting for this request: the logged-in user's when users log in.

        Raises:
            LoginRequiredError: users log in and this request has no live session.
        """
        if self.sessions is None:
            return self.service
        session = self.sessions.get(request.cookies.get(SESSION_COOKIE))
        if session is None:
            raise LoginRequiredError
        return session.service

    def _user(self, request: Request) -> str | None:
        if self.sessions is None:
            return None
        session = self.sessions.get(request.cookies.get(SESSION_COOKIE))
        return None if session is None else session.user

    async def login_page(self, request: Request) -> Response:
        if self.sessions is None:
            return RedirectResponse("/", status_code=303)
        next_path = _local_path(request.query_params.get("next"))
        return self.render(request, "login.html", next=next_path, error=None, username="")

    async def login(self, request: Request) -> Response:
        form = await _form(request)
        if self.sessions is None:
            return RedirectResponse("/", status_code=303)
        username = form.get("username", "").strip()
        next_path = _local_path(form.get("next"))
        try:
            cookie = await self.call(self.sessions.login, username, form.get("password", ""))
        except ConsoleLoginError as error:
            return self.render(
                request,
                "login.html",
                status_code=401,
                next=next_path,
                error=str(error),
                username=username,
            )
        response = RedirectResponse(next_path, status_code=303)
        response.set_cookie(
            SESSION_COOKIE,
            cookie,
            path="/",
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return response

    async def logout(self, request: Request) -> Response:
        await _form(request)
        if self.sessions is not None:
            await self.call(self.sessions.logout, request.cookies.get(SESSION_COOKIE))
        response = _redirect("/login", "logged out")
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response

    async def login_required(self, request: Request, error: Exception) -> Response:
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": "log in first"}, status_code=401)
        wanted = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"/login?next={_segment(wanted)}", status_code=303)

    # ------------------------------------------------------------------ helpers

    def render(
        self, request: Request, template: str, status_code: int = 200, **values: Any
    ) -> HTMLResponse:
        page = self.env.get_template(template).render(
            bootstrap=self.service.bootstrap_servers,
            user=self._user(request),
            path=request.url.path,
            notice=request.query_params.get("notice"),
            **values,
        )
        return HTMLResponse(page, status_code=status_code)

    async def call(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await run_in_threadpool(function, *args, **kwargs)

    # ------------------------------------------------------------------ pages

    async def cluster(self, request: Request) -> Response:
        view = await self.call(self._service(request).cluster)
        return self.render(request, "cluster.html", cluster=view)

    async def topics(self, request: Request) -> Response:
        rows = await self.call(self._service(request).topics)
        return self.render(request, "topics.html", topics=rows)

    async def create_topic(self, request: Request) -> Response:
        form = await _form(request)
        name = await self.call(
            self._service(request).create_topic,
            form.get("name", ""),
            form.get("partitions", ""),
            form.get("replication_factor", ""),
        )
        return _redirect(f"/topics/{_segment(name)}", f"topic {name} created")

    async def topic(self, request: Request) -> Response:
        view = await self.call(self._service(request).topic, request.path_params["topic"])
        return self.render(request, "topic.html", topic=view)

    async def delete_topic(self, request: Request) -> Response:
        name = request.path_params["topic"]
        await _form(request)
        await self.call(self._service(request).delete_topic, name)
        return _redirect("/topics", f"topic {name} deleted")

    async def alter_config(self, request: Request) -> Response:
        name = request.path_params["topic"]
        form = await _form(request)
        config = form.get("name", "")
        remove = form.get("action") == "delete"
        await self.call(
            self._service(request).alter_config,
            name,
            config,
            None if remove else form.get("value", ""),
        )
        told = f"{config.strip()} reset to its default" if remove else f"{config.strip()} set"
        return _redirect(f"/topics/{_segment(name)}", told)

    async def messages(self, request: Request) -> Response:
        query = request.query_params
        page = await self.call(
            self._service(request).messages,
            request.path_params["topic"],
            query.get("partition"),
            query.get("offset"),
            query.get("timestamp"),
            query.get("limit"),
        )
        return self.render(
            request,
            "messages.html",
            page=page,
            form={k: query.get(k, "") for k in ("offset", "timestamp", "limit")},
        )

    async def groups(self, request: Request) -> Response:
        rows = await self.call(self._service(request).groups)
        return self.render(request, "groups.html", groups=rows)

    async def group(self, request: Request) -> Response:
        group_id = request.query_params.get("id", "")
        service = self._service(request)
        view = await self.call(service.group, group_id)
        history = await self.call(service.rebalances, group_id)
        return self.render(
            request,
            "group.html",
            group=view,
            history=history,
            plan=None,
            executed=False,
            form={},
        )

    async def reset_offsets(self, request: Request) -> Response:
        form = await _form(request)
        group_id = form.get("id", "")
        spec = parse_reset_spec(form.get("strategy"), form.get("value"))
        execute = form.get("execute") == "yes"
        plan = await self.call(
            self._service(request).reset_offsets,
            group_id,
            form.get("topic", "").strip() or None,
            spec,
            execute=execute,
        )
        view = await self.call(self._service(request).group, group_id)
        history = await self.call(self._service(request).rebalances, group_id)
        return self.render(
            request,
            "group.html",
            group=view,
            history=history,
            plan=plan,
            executed=execute,
            form=form,
        )

    async def offsets(self, request: Request) -> Response:
        return await self.json(
            self._service(request).log_end_offsets, request.query_params.get("topic") or None
        )

    async def group_lag(self, request: Request) -> Response:
        return await self.json(
            _lag_json, self._service(request), request.query_params.get("id", "")
        )

    async def json(self, function: Callable[..., Any], *args: Any) -> Response:
        try:
            answer = await self.call(function, *args)
        except Exception as error:  # the script shows the line; the page stays up
            status, message = _status_and_message(error)
            return JSONResponse({"error": message}, status_code=status)
        return JSONResponse(answer)

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        media_type = STATIC_FILES.get(name)
        if media_type is None:
            raise HTTPException(404)
        body = resources.files("odradek.console").joinpath("static", name).read_bytes()
        return Response(body, media_type=media_type, headers={"Cache-Control": "no-cache"})

    # ------------------------------------------------------------------ errors

    async def error(self, request: Request, error: Exception) -> Response:
        status, message = _status_and_message(error)
        if status >= 500 and not isinstance(error, KafkaError):
            log.error("console: %s %s failed", request.method, request.url.path, exc_info=error)
        return self.render(
            request, "error.html", status_code=status, status=status, message=message
        )


def _lag_json(service: ConsoleService, group_id: str) -> dict[str, Any]:
    """A group's lag for the live table: totals and rows, figures and their text."""
    view = service.group(group_id)
    return {
        "state": view.state,
        "lag": view.lag,
        "lag_text": f"{view.lag:,}",
        "lag_ms": view.lag_ms,
        "lag_time_text": format_duration_ms(view.lag_ms),
        "partitions": [
            {
                "key": f"{row.topic}/{row.partition}",
                "committed": "-" if row.committed is None else str(row.committed),
                "log_end_offset": str(row.log_end_offset),
                "lag": "-" if row.lag is None else str(row.lag),
                "lag_time": format_duration_ms(row.lag_ms),
                "next_timestamp": row.next_timestamp,
            }
            for row in view.lags
        ],
    }


def _status_and_message(error: BaseException) -> tuple[int, str]:
    if isinstance(error, HTTPException):
        if error.status_code == 404:
            return 404, "no such page"
        return error.status_code, str(error.detail)
    if isinstance(error, ConsoleNotFoundError):
        return 404, str(error)
    if isinstance(error, ConsoleInputError):
        return 400, str(error)
    if isinstance(error, KafkaError):
        name = error.error_code.name
        text = str(error)
        line = name if text in ("", name) else f"{name}: {text}"
        if isinstance(error, KafkaTimeoutError) or name in _UNREACHABLE:
            return 503, f"the broker did not answer: {line}"
        return 400, f"the broker refused: {line}"
    if isinstance(error, OdradekError):
        return 400, str(error)
    return 500, f"internal error ({type(error).__name__}); the console's log has the details"


async def _form(request: Request) -> Mapping[str, str]:
    """The posted form (urlencoded), after the same-origin check.

    Raises:
        HTTPException: 403 for a post from another site, 413 for a body too large, 415 for
            another content type.
    """
    origin = request.headers.get("origin")
    own = f"{request.url.scheme}://{request.url.netloc}"
    if (origin is not None and origin != own) or request.headers.get(
        "sec-fetch-site"
    ) == "cross-site":
        raise HTTPException(403, "a form posted from another site is refused")
    content_type = request.headers.get("content-type", "").split(";")[0].strip()
    if content_type != "application/x-www-form-urlencoded":
        raise HTTPException(415, "forms are posted as application/x-www-form-urlencoded")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise HTTPException(413, "the form is too large")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise HTTPException(400, "the form is not UTF-8") from None
    return {k: v[-1] for k, v in urllib.parse.parse_qs(text, keep_blank_values=True).items()}


def _local_path(value: str | None) -> str:
    """A path of this console to go to after the login (anything else: ``/``), so the login
    form cannot send the browser to another site."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/"
    return value


def _redirect(url: str, notice: str) -> RedirectResponse:
    """See-other to ``url`` with a notice line (post/redirect/get)."""
    return RedirectResponse(f"{url}?notice={_segment(notice)}", status_code=303)


def create_app(
    service: ConsoleService,
    allowed_hosts: Sequence[str] = ("*",),
    sessions: SessionStore | None = None,
) -> Starlette:
    """The console's ASGI application over ``service`` (which the caller closes), answering
    requests whose ``Host`` is one of ``allowed_hosts`` (names or addresses without the port;
    ``*``: any). With ``sessions`` (which the caller closes too) every page but the login page
    needs a logged-in user, and acts as that user."""
    pages = _Pages(service, sessions)
    routes = [
        Route("/login", pages.login_page),
        Route("/login", pages.login, methods=["POST"]),
        Route("/logout", pages.logout, methods=["POST"]),
        Route("/", pages.cluster),
        Route("/topics", pages.topics),
        Route("/topics", pages.create_topic, methods=["POST"]),
        Route("/topics/{topic}", pages.topic),
        Route("/topics/{topic}/delete", pages.delete_topic, methods=["POST"]),
        Route("/topics/{topic}/config", pages.alter_config, methods=["POST"]),
        Route("/topics/{topic}/messages", pages.messages),
        Route("/groups", pages.groups),
        Route("/group", pages.group),
        Route("/group/reset", pages.reset_offsets, methods=["POST"]),
        Route("/api/offsets", pages.offsets),
        Route("/api/group", pages.group_lag),
        Route("/static/{name}", pages.static),
    ]
    return Starlette(
        routes=routes,
        middleware=[
            Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts), www_redirect=False)
        ],
        # OdradekError and HTTPException are answered by Starlette's exception middleware (no
        # traceback logged); anything else reaches the server-error one as a 500.
        exception_handlers={
            LoginRequiredError: pages.login_required,
            OdradekError: pages.error,
            HTTPException: pages.error,
            Exception: pages.error,
        },
    )
