"""Model routing: a request's ``model`` through ``[models]`` aliases, ``provider:model``
strings, or the built-in ``scripted`` backend. Models are built once and reused."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentloop.errors import AgentloopError
from agentloop.gateway.config import GatewayConfig, ModelEntry
from agentloop.gateway.scripted import ScriptedBackend
from agentloop.gateway.wire import ApiError
from agentloop.models.base import Model
from agentloop.models.resolve import resolve

SCRIPTED = "scripted"


class ModelRouter:
    def __init__(self, config: GatewayConfig, extra: Mapping[str, Model] | None = None) -> None:
        self.aliases: dict[str, str | ModelEntry] = dict(config.models)
        self.allow_provider_models = config.server.allow_provider_models
        self._models: dict[str, Model] = dict(extra or {})
        self._extra = frozenset(self._models)

    def names(self) -> list[str]:
        """Model ids to advertise on ``GET /v1/models``."""
        return sorted({SCRIPTED, *self.aliases, *self._extra})

    def get(self, name: str) -> Model:
        """The model for a request, or a 400 naming it."""
        model = self._models.get(name)
        if model is not None:
            return model
        model = self._build(name)
        self._models[name] = model
        return model

    def _build(self, name: str) -> Model:
        entry = self.aliases.get(name)
        options: dict[str, Any] | None
        if entry is None:
            if name == SCRIPTED or name.startswith(SCRIPTED + ":"):
                return ScriptedBackend(name)
            if ":" not in name or not self.allow_provider_models:
                known = ", ".join(self.names())
                raise ApiError(
                    400,
                    f"The model '{name}' does not exist (known: {known}).",
                    code="model_not_found",
                    param="model",
                )
            spec, options = name, {}
        elif isinstance(entry, str):
            spec, options = entry, {}
        else:
            spec, options = entry.model, None
        if spec == SCRIPTED or spec.startswith(SCRIPTED + ":"):
            return ScriptedBackend(spec)
        try:
            if options is None:
                assert isinstance(entry, ModelEntry)
                options = entry.resolve_options()
            return resolve(spec, **options)
        except AgentloopError as exc:
            raise ApiError(
                400,
                f"The model '{name}' is not available: {exc}",
                code="model_not_found",
                param="model",
            ) from None
        except Exception as exc:  # a provider SDK refusing its configuration
            raise ApiError(
                400,
                f"The model '{name}' is not available: {type(exc).__name__}: {exc}",
                code="model_not_available",
                param="model",
            ) from None

    async def aclose(self) -> None:
        for name, model in self._models.items():
            if name not in self._extra:
                await model.aclose()
