"""Retries of model calls: backoff, Retry-After, what is retried and what is not, and the
count reported. Exercised through OpenAIChatModel over a respx-faked API; waits are recorded by
a fake sleep, never spent."""

from __future__ import annotations

import httpx
import pytest
import respx
from tests.models.openai_fakes import CHAT_URL, api_error, chat_stream, completion, http_client

from agentloop import Agent
from agentloop.errors import (
    AuthenticationFailed,
    BadRequest,
    ModelError,
    ModelNotFound,
    ProviderUnavailable,
    RateLimited,
)
from agentloop.items import user
from agentloop.models.base import ModelRequest, ResponseDone, TextDelta
from agentloop.models.openai_chat import OpenAIChatModel
from agentloop.models.retry import RetryPolicy, call_with_retries

pytestmark = pytest.mark.anyio

REQUEST = ModelRequest(items=[user("hi")])


class Waits:
    """A fake ``sleep`` that records how long it was asked to wait."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)


@pytest.fixture
def router() -> respx.Router:
    return respx.Router(assert_all_called=False)


@pytest.fixture
def waits() -> Waits:
    return Waits()


def make_model(router: respx.Router, waits: Waits, **policy: float) -> OpenAIChatModel:
    retry = RetryPolicy(max_retries=int(policy.pop("max_retries", 3)), jitter=False, **policy)
    model = OpenAIChatModel(
        "gpt-4.1-mini", api_key="sk-test", retry=retry, http_client=http_client(router)
    )
    model.sleep = waits
    return model


def answers(router: respx.Router, *replies: httpx.Response | type[Exception]) -> respx.Route:
    return router.post(CHAT_URL).mock(side_effect=list(replies))


def ok() -> httpx.Response:
    return httpx.Response(200, json=completion("fine"))


async def test_a_429_is_retried_after_the_retry_after_header(
    router: respx.Router, waits: Waits
) -> None:
    limited = api_error(429, "Rate limit reached", type="requests", headers={"retry-after": "7"})
    route = answers(router, limited, ok())
    response = await make_model(router, waits).request(REQUEST)
    assert response.text == "fine"
    assert response.retries == 1
    assert waits.seconds == [7.0]
    assert route.call_count == 2


async def test_retry_after_ms_is_honoured_too(router: respx.Router, waits: Waits) -> None:
    limited = api_error(429, "Slow down", headers={"retry-after-ms": "1500", "retry-after": "9"})
    answers(router, limited, ok())
    await make_model(router, waits).request(REQUEST)
    assert waits.seconds == [1.5]


async def test_server_errors_are_retried_with_exponential_backoff(
    router: respx.Router, waits: Waits
) -> None:
    route = answers(
        router,
        api_error(500, "The server had an error", type="server_error"),
        httpx.Response(502, text="<html>Bad Gateway</html>"),
        api_error(503, "Overloaded", type="server_error"),
        ok(),
    )
    response = await make_model(router, waits, initial_delay=0.5).request(REQUEST)
    assert response.retries == 3
    assert waits.seconds == [0.5, 1.0, 2.0]
    assert route.call_count == 4


async def test_timeouts_and_dropped_connections_are_retried(
    router: respx.Router, waits: Waits
) -> None:
    route = answers(router, httpx.ReadTimeout, httpx.ConnectError, httpx.RemoteProtocolError, ok())
    response = await make_model(router, waits).request(REQUEST)
    assert response.retries == 3
    assert route.call_count == 4


@pytest.mark.parametrize(
    ("status", "error_type"),
    [
        (400, BadRequest),
        (401, AuthenticationFailed),
        (403, AuthenticationFailed),
        (404, ModelNotFound),
        (409, BadRequest),
        (422, BadRequest),
    ],
)
async def test_other_client_errors_are_never_retried(
    router: respx.Router, waits: Waits, status: int, error_type: type[ModelError]
) -> None:
    route = answers(router, api_error(status, "The model `gpt-9` does not exist"), ok())
    with pytest.raises(error_type) as info:
        await make_model(router, waits).request(REQUEST)
    assert info.value.retries == 0
    assert info.value.status_code == status
    assert route.call_count == 1 and waits.seconds == []


async def test_an_exhausted_quota_is_not_retried(router: respx.Router, waits: Waits) -> None:
    quota = api_error(429, "You exceeded your current quota", code="insufficient_quota")
    route = answers(router, quota, ok())
    with pytest.raises(RateLimited, match="quota"):
        await make_model(router, waits).request(REQUEST)
    assert route.call_count == 1


async def test_after_the_last_retry_the_error_reports_the_retry_count(
    router: respx.Router, waits: Waits
) -> None:
    route = answers(router, *[api_error(503, "Overloaded", type="server_error")] * 4)
    with pytest.raises(ProviderUnavailable) as info:
        await make_model(router, waits, max_retries=2).request(REQUEST)
    assert info.value.retries == 2
    assert route.call_count == 3


async def test_a_stream_is_retried_while_nothing_has_been_streamed(
    router: respx.Router, waits: Waits
) -> None:
    route = answers(
        router,
        api_error(429, "Slow down", headers={"retry-after": "2"}),
        httpx.ConnectError,
        chat_stream(["Hi"]),
    )
    parts = [p async for p in make_model(router, waits).stream(REQUEST)]
    assert parts[0] == TextDelta(delta="Hi")
    done = parts[-1]
    assert isinstance(done, ResponseDone) and done.response.retries == 2
    assert waits.seconds[0] == 2.0
    assert route.call_count == 3


async def test_an_agent_run_ends_failed_with_the_typed_error_after_the_last_retry(
    router: respx.Router, waits: Waits
) -> None:
    limited = api_error(429, "Rate limit reached", headers={"retry-after": "1"})
    route = answers(router, limited, limited, limited, ok())
    result = await Agent(make_model(router, waits, max_retries=2)).run("hi")
    assert result.status == "failed"
    assert result.reason == "model_error"
    assert isinstance(result.error, RateLimited)
    assert result.error.retries == 2 and result.error.status_code == 429
    assert route.call_count == 3
    assert waits.seconds == [1.0, 1.0]


# --- the policy itself ---------------------------------------------------------------------


def test_backoff_grows_exponentially_up_to_the_cap() -> None:
    policy = RetryPolicy(initial_delay=1.0, multiplier=3.0, max_delay=10.0, jitter=False)
    error = ProviderUnavailable("down")
    assert [policy.delay(n, error) for n in (1, 2, 3, 4)] == [1.0, 3.0, 9.0, 10.0]


def test_jitter_stays_between_half_and_the_full_delay() -> None:
    policy = RetryPolicy(initial_delay=2.0, jitter=True)
    delays = [policy.delay(2, ProviderUnavailable("down")) for _ in range(200)]
    assert all(2.0 <= d <= 4.0 for d in delays)
    assert len(set(delays)) > 1


def test_retry_after_wins_over_backoff_but_not_over_the_cap() -> None:
    policy = RetryPolicy(initial_delay=1.0, max_delay=30.0, jitter=False)
    assert policy.delay(1, RateLimited("slow", retry_after=12.0)) == 12.0
    assert policy.delay(1, RateLimited("slow", retry_after=600.0)) == 30.0
    assert policy.delay(3, RateLimited("slow")) == 4.0


async def test_call_with_retries_counts_retries_on_success() -> None:
    waits = Waits()
    failures = [ProviderUnavailable("a"), RateLimited("b", retry_after=0.0)]

    async def flaky() -> str:
        if failures:
            raise failures.pop(0)
        return "ok"

    value, retries = await call_with_retries(flaky, RetryPolicy(jitter=False), sleep=waits)
    assert (value, retries) == ("ok", 2)
    assert waits.seconds == [0.5, 0.0]
