"""The router without sockets: it advertises exactly the implemented versions of the keys it
has handlers for, finds no handler for anything else, and dispatches a request to its key's
handler with the context."""

from __future__ import annotations

import types
from typing import Any

import kio.schema.api_versions.v3.request as api_versions_v3
import pytest
from tests.broker.fakes import context, request

from odradek.broker.context import BrokerContext
from odradek.broker.handlers import api_versions
from odradek.broker.router import Router
from odradek.protocol import IMPLEMENTED_VERSIONS, ApiKey, Request


def recorder(calls: list[tuple[BrokerContext, Request]], answer: Any) -> Any:
    def handle(ctx: BrokerContext, req: Request) -> Any:
        calls.append((ctx, req))
        return answer

    return handle


def test_advertises_the_implemented_versions_of_the_handled_keys_only() -> None:
    def noop(ctx: BrokerContext, req: Request) -> None:
        return None

    # VOTE has a handler but no implemented versions: not advertised.
    router = Router({ApiKey.FETCH: noop, ApiKey.METADATA: noop, ApiKey.VOTE: noop})

    assert router.supported_versions == {
        ApiKey.FETCH: IMPLEMENTED_VERSIONS[ApiKey.FETCH],
        ApiKey.METADATA: IMPLEMENTED_VERSIONS[ApiKey.METADATA],
    }
    assert list(router.supported_versions) == sorted(router.supported_versions)
    assert router.handler(ApiKey.FETCH) is noop
    assert router.handler(ApiKey.VOTE) is None
    assert router.handler(ApiKey.PRODUCE) is None
    assert router.handler(999) is None


def test_dispatch_calls_the_handler_of_the_request_key_with_the_context() -> None:
    calls: list[tuple[BrokerContext, Request]] = []
    other: list[tuple[BrokerContext, Request]] = []
    router = Router(
        {ApiKey.API_VERSIONS: recorder(calls, "answer"), ApiKey.METADATA: recorder(other, None)}
    )
    ctx = context()
    req = request(
        api_versions_v3.ApiVersionsRequest(client_software_name="t", client_software_version="1")
    )

    assert router.dispatch(ctx, req) == "answer"
    assert calls == [(ctx, req)]
    assert other == []


def test_from_modules_takes_each_module_key_and_handle() -> None:
    fake = types.SimpleNamespace(API_KEY=ApiKey.METADATA, handle=lambda ctx, req: None)

    router = Router.from_modules([api_versions, fake])  # type: ignore[list-item]

    assert router.handler(ApiKey.API_VERSIONS) is api_versions.handle
    assert router.handler(ApiKey.METADATA) is fake.handle


def test_api_versions_answers_what_the_router_advertises() -> None:
    router = Router.from_modules([api_versions])
    ctx = context()
    ctx.supported_versions = router.supported_versions
    req = request(
        api_versions_v3.ApiVersionsRequest(client_software_name="t", client_software_version="1")
    )

    response: Any = router.dispatch(ctx, req)

    versions = IMPLEMENTED_VERSIONS[ApiKey.API_VERSIONS]
    assert [(k.api_key, k.min_version, k.max_version) for k in response.api_keys] == [
        (ApiKey.API_VERSIONS, versions.min_version, versions.max_version)
    ]


def test_dispatching_a_key_without_handler_is_a_bug_not_a_silent_answer() -> None:
    router = Router({})
    req = request(
        api_versions_v3.ApiVersionsRequest(client_software_name="t", client_software_version="1")
    )

    with pytest.raises(KeyError):
        router.dispatch(context(), req)
