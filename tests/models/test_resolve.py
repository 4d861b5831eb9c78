"""resolve("provider:model", **options): the right adapter, with every option passed through."""

from __future__ import annotations

import httpx
import pytest
import respx
from tests.models.openai_fakes import completion, http_client

import agentloop.models
from agentloop import Agent
from agentloop.errors import ConfigError
from agentloop.items import user
from agentloop.models import Model, ModelRequest, RetryPolicy, resolve
from agentloop.models.openai_chat import OpenAIChatModel
from agentloop.models.openai_responses import OpenAIResponsesModel

pytestmark = pytest.mark.anyio


def unwrap(model: Model) -> Model:
    """The adapter inside any wrapper resolve adds (e.g. the text-mode fallback)."""
    while not isinstance(model, OpenAIChatModel | OpenAIResponsesModel):
        model = model.model  # type: ignore[attr-defined]
    return model


@pytest.fixture(autouse=True)
def no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def test_openai_is_chat_completions_with_options_passed_through() -> None:
    retry = RetryPolicy(max_retries=5)
    model = unwrap(
        resolve(
            "openai:gpt-4.1-mini",
            api_key="sk-test",
            base_url="https://openrouter.ai/api/v1",
            retry=retry,
            strict_tools=True,
            timeout=12.5,
            context_window=128_000,
        )
    )
    assert isinstance(model, OpenAIChatModel)
    assert model.model_name == "gpt-4.1-mini"
    assert model.client.api_key == "sk-test"
    assert str(model.client.base_url) == "https://openrouter.ai/api/v1/"
    assert model.client.timeout == 12.5
    assert model.retry is retry
    assert model.strict_tools is True
    assert model.context_window == 128_000


def test_openai_responses_is_the_responses_adapter() -> None:
    model = unwrap(resolve("openai-responses:o4-mini", api_key="sk-test"))
    assert isinstance(model, OpenAIResponsesModel)
    assert model.name == "openai-responses:o4-mini"


def test_the_provider_name_ignores_case_and_the_model_name_keeps_its_colons() -> None:
    model = unwrap(resolve("OpenAI:ft:gpt-4o-mini-2024-07-18:acme::9xYz", api_key="sk-test"))
    assert isinstance(model, OpenAIChatModel)
    assert model.model_name == "ft:gpt-4o-mini-2024-07-18:acme::9xYz"


@pytest.mark.parametrize("spec", ["gpt-4.1", "openai:", ":gpt-4.1", ""])
def test_a_spec_without_provider_and_model_is_a_config_error(spec: str) -> None:
    with pytest.raises(ConfigError, match="provider:model"):
        resolve(spec)


def test_an_unknown_provider_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="openai-responses") as info:
        resolve("openia:gpt-4.1")
    assert "'openia'" in str(info.value)


def test_a_misspelt_option_is_named_with_the_accepted_ones() -> None:
    with pytest.raises(ConfigError, match="'bse_url'") as info:
        resolve("openai:gpt-4.1", api_key="sk-test", bse_url="http://localhost:8000/v1")
    assert "base_url" in str(info.value)


def test_a_bad_tool_calling_mode_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="tool_calling"):
        resolve("openai:gpt-4.1", api_key="sk-test", tool_calling="json")


def test_a_missing_key_names_the_environment_variable() -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        resolve("openai:gpt-4.1")


def test_text_tool_calling_wraps_the_model() -> None:
    text_mode = pytest.importorskip("agentloop.models.text_mode")
    model = resolve("openai:llama3", base_url="http://localhost:11434/v1", tool_calling="text")
    assert isinstance(model, text_mode.TextToolMode)


def test_an_agent_takes_a_model_string(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    agent = Agent("openai:gpt-4.1-mini")
    model = unwrap(agent.model)
    assert isinstance(model, OpenAIChatModel) and model.client.api_key == "sk-env"


async def test_a_resolved_model_talks_to_the_given_base_url() -> None:
    router = respx.Router()
    route = router.post("http://localhost:8000/v1/chat/completions").mock(
        return_value=httpx.Response(200, json=completion("hello from vLLM", model="qwen3"))
    )
    model = resolve(
        "openai:qwen3", base_url="http://localhost:8000/v1", http_client=http_client(router)
    )
    response = await model.request(ModelRequest(items=[user("hi")]))
    assert response.text == "hello from vLLM"
    assert route.call_count == 1


def test_the_models_package_exports_resolve_and_the_error_types() -> None:
    for name in (
        "resolve",
        "RateLimited",
        "ProviderUnavailable",
        "AuthenticationFailed",
        "BadRequest",
        "ContextWindowExceeded",
        "ModelNotFound",
        "ToolsNotSupported",
    ):
        assert name in agentloop.models.__all__
        assert hasattr(agentloop.models, name)
