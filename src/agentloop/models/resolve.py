"""``"provider:model"`` strings to :class:`~agentloop.models.base.Model` objects."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping
from typing import Any

from agentloop.errors import ConfigError
from agentloop.models.base import Model

# provider name -> "module:Class"; imported only when used, so an unused SDK costs nothing.
PROVIDERS: dict[str, str] = {
    "openai": "agentloop.models.openai_chat:OpenAIChatModel",
    "openai-responses": "agentloop.models.openai_responses:OpenAIResponsesModel",
    "anthropic": "agentloop.models.anthropic:AnthropicModel",
    "gemini": "agentloop.models.gemini:GeminiModel",
    "ollama": "agentloop.models.ollama:OllamaModel",
    "litellm": "agentloop.models.litellm:LiteLLMModel",
}


def resolve(spec: str, **options: Any) -> Model:
    """Build the model named by ``"provider:model"``.

    ``options`` go to the provider's constructor (``base_url``, ``api_key``, ``retry``...).
    ``tool_calling="text"`` wraps the model in the text-mode (ReAct) protocol.
    """
    provider, sep, name = spec.partition(":")
    provider = provider.strip().lower()
    if not sep or not provider or not name:
        raise ConfigError(
            f"model {spec!r} must look like 'provider:model', e.g. 'openai:gpt-4.1-mini'; "
            f"providers: {', '.join(PROVIDERS)}"
        )
    target = PROVIDERS.get(provider)
    if target is None:
        raise ConfigError(
            f"unknown model provider {provider!r} in {spec!r}; known: {', '.join(PROVIDERS)}"
        )
    tool_calling = options.pop("tool_calling", "native")
    if tool_calling not in ("native", "text"):
        raise ConfigError("tool_calling must be 'native' or 'text'")
    module_name, _, class_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        hint = (
            " (install it with: pip install 'agentloop[litellm]')" if provider == "litellm" else ""
        )
        raise ConfigError(f"provider {provider!r} is not available: {exc}{hint}") from None
    cls = getattr(module, class_name)
    _check_options(provider, cls, options)
    model: Model = cls(name, **options)
    if tool_calling == "text":
        from agentloop.models.text_mode import TextToolMode

        model = TextToolMode(model)
    elif provider in ("openai", "ollama", "litellm"):  # may serve models without tool calling
        from agentloop.models.text_mode import TextModeFallback

        model = TextModeFallback(model)
    return model


def _check_options(provider: str, cls: type[Any], options: Mapping[str, Any]) -> None:
    """A misspelt option is a clear ConfigError listing the ones the provider takes."""
    params = list(inspect.signature(cls).parameters.values())[1:]  # after the model name
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return
    names = [p.name for p in params if p.kind is not inspect.Parameter.VAR_POSITIONAL]
    unknown = sorted(set(options) - set(names))
    if unknown:
        raise ConfigError(
            f"provider {provider!r} does not take option(s) {', '.join(map(repr, unknown))}; "
            f"it takes: {', '.join(names) or 'no options'}, tool_calling"
        )
