"""The openai SDK's failures as agentloop's typed errors, one case per status and kind."""

from __future__ import annotations

import email.utils
import time

import httpx
import pytest
import respx
from tests.models.openai_fakes import CHAT_URL, api_error, http_client

from agentloop.errors import (
    AuthenticationFailed,
    BadRequest,
    ContextWindowExceeded,
    ModelError,
    ModelNotFound,
    ProviderUnavailable,
    RateLimited,
    ToolsNotSupported,
)
from agentloop.items import user
from agentloop.models.base import ModelRequest
from agentloop.models.openai_chat import OpenAIChatModel
from agentloop.models.retry import NO_RETRIES

pytestmark = pytest.mark.anyio


async def fail_with(reply: httpx.Response | type[Exception]) -> ModelError:
    router = respx.Router()
    router.post(CHAT_URL).mock(side_effect=[reply])
    model = OpenAIChatModel(
        "gpt-4.1-mini", api_key="sk-test", retry=NO_RETRIES, http_client=http_client(router)
    )
    with pytest.raises(ModelError) as info:
        await model.request(ModelRequest(items=[user("hi")]))
    return info.value


@pytest.mark.parametrize(
    ("reply", "error_type", "status"),
    [
        (api_error(429, "Rate limit reached for gpt-4.1", type="requests"), RateLimited, 429),
        (api_error(500, "The server had an error", type="server_error"), ProviderUnavailable, 500),
        (httpx.Response(502, text="Bad Gateway"), ProviderUnavailable, 502),
        (api_error(503, "The engine is currently overloaded"), ProviderUnavailable, 503),
        (api_error(408, "Request timed out"), ProviderUnavailable, 408),
        (api_error(401, "Incorrect API key provided: sk-test", code="invalid_api_key"),
         AuthenticationFailed, 401),
        (api_error(403, "Country, region, or territory not supported",
                   code="unsupported_country_region_territory"), AuthenticationFailed, 403),
        (api_error(404, "The model `gpt-9` does not exist or you do not have access to it.",
                   code="model_not_found"), ModelNotFound, 404),
        (api_error(404, 'model "llama9" not found, try pulling it first', type="api_error"),
         ModelNotFound, 404),
        (api_error(400, "This model's maximum context length is 128000 tokens. However, your "
                   "messages resulted in 130000 tokens.", code="context_length_exceeded"),
         ContextWindowExceeded, 400),
        (api_error(400, "This model's maximum context length is 8192 tokens. However, you "
                   "requested 9000 tokens in the messages."), ContextWindowExceeded, 400),  # vLLM
        (api_error(400, "registry.ollama.ai/library/gemma2:2b does not support tools",
                   type="api_error"), ToolsNotSupported, 400),  # Ollama's /v1
        (api_error(400, '"auto" tool choice requires --enable-auto-tool-choice and '
                   "--tool-call-parser to be set"), ToolsNotSupported, 400),  # vLLM
        (api_error(400, "Invalid value for 'temperature'", param="temperature"), BadRequest, 400),
        (api_error(422, "Unprocessable Entity"), BadRequest, 422),
    ],
)  # fmt: skip
async def test_http_statuses_map_to_typed_errors(
    reply: httpx.Response, error_type: type[ModelError], status: int
) -> None:
    error = await fail_with(reply)
    assert type(error) is error_type
    assert error.status_code == status


async def test_the_message_says_who_answered_and_what_they_said() -> None:
    error = await fail_with(api_error(400, "Invalid value for 'temperature'"))
    assert str(error) == "OpenAI returned HTTP 400: Invalid value for 'temperature'"


async def test_a_404_that_is_not_about_a_model_hints_at_the_base_url() -> None:
    error = await fail_with(httpx.Response(404, text="<html>Not Found</html>"))
    assert type(error) is BadRequest
    assert "base_url" in str(error)


async def test_a_rate_limit_carries_retry_after() -> None:
    error = await fail_with(api_error(429, "slow down", headers={"retry-after": "20"}))
    assert isinstance(error, RateLimited) and error.retry_after == 20.0
    assert error.retryable


async def test_an_exhausted_quota_is_a_rate_limit_that_is_not_retryable() -> None:
    error = await fail_with(
        api_error(429, "You exceeded your current quota", code="insufficient_quota")
    )
    assert isinstance(error, RateLimited) and not error.retryable


@pytest.mark.parametrize(
    "exception", [httpx.ConnectTimeout, httpx.ReadTimeout, httpx.ConnectError, httpx.ReadError]
)
async def test_timeouts_and_connection_failures_are_provider_unavailable(
    exception: type[Exception],
) -> None:
    error = await fail_with(exception)
    assert type(error) is ProviderUnavailable
    assert error.status_code is None
    assert error.retryable


async def test_retry_after_may_be_an_http_date() -> None:
    when = email.utils.formatdate(time.time() + 60, usegmt=True)
    error = await fail_with(api_error(429, "slow down", headers={"retry-after": when}))
    assert isinstance(error, RateLimited) and error.retry_after is not None
    assert 55 <= error.retry_after <= 61


async def test_an_unreadable_retry_after_is_ignored() -> None:
    error = await fail_with(api_error(429, "slow down", headers={"retry-after": "soon"}))
    assert isinstance(error, RateLimited) and error.retry_after is None
