"""Gateway configuration: ``agentloop.toml`` plus ``AGENTLOOP_*`` environment variables.

Every key can be set from the environment as ``AGENTLOOP_<SECTION>__<KEY>`` (for example
``AGENTLOOP_SERVER__PORT=9000``, ``AGENTLOOP_MODELS__FAST=openai:gpt-4.1-mini``,
``AGENTLOOP_TOOLSETS__FILES=pkg.module:attr``); values that look like JSON objects or lists are
decoded. Precedence: command-line flags, then environment, then file, then defaults.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agentloop.errors import ConfigError
from agentloop.store.url import DEFAULT_URL, normalise_url

ENV_PREFIX = "AGENTLOOP_"
SECTIONS = ("server", "models", "toolsets")


class ModelEntry(BaseModel):
    """An inline ``[models]`` entry: ``{ model = "openai:NAME", base_url = ..., ... }``."""

    model_config = ConfigDict(extra="forbid")

    model: str
    base_url: str | None = None
    api_key: str | None = None
    api_key_env: str | None = None
    context_window: int | None = Field(default=None, gt=0)
    options: dict[str, Any] = Field(default_factory=dict)
    """Extra keyword arguments for the provider's constructor."""

    def resolve_options(self) -> dict[str, Any]:
        """Keyword arguments for :func:`agentloop.models.resolve`."""
        opts: dict[str, Any] = dict(self.options)
        if self.base_url is not None:
            opts["base_url"] = self.base_url
        if self.api_key is not None:
            opts["api_key"] = self.api_key
        elif self.api_key_env is not None:
            value = os.environ.get(self.api_key_env)
            if value is None:
                raise ConfigError(f"environment variable {self.api_key_env} is not set")
            opts["api_key"] = value
        return opts


class ServerConfig(BaseModel):
    """``[server]``: where to listen, where to store, and the gateway's limits."""

    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=0, le=65535)
    store: str = DEFAULT_URL
    client_tools_status: Literal["completed", "requires_action"] = "completed"
    """Status of a response that stops for client-executed function calls."""
    default_model: str | None = None
    """Model used when a request names none."""
    allow_provider_models: bool = True
    """Whether requests may name any ``provider:model`` string, not only ``[models]`` aliases."""
    max_body_bytes: int = Field(default=32 * 1024 * 1024, gt=0)
    max_turns: int = Field(default=20, gt=0)
    max_concurrent_per_tenant: int = Field(default=64, gt=0)
    tool_timeout: float = Field(default=300.0, gt=0)
    cancel_wait: float = Field(default=5.0, ge=0)
    """Seconds a cancel waits for the worker running the response (another process) to stop it
    and store what it did; after that the response is marked cancelled as it is stored."""
    cancel_poll_interval: float = Field(default=0.5, gt=0)
    """How often a worker checks the store for cancels of its responses asked elsewhere (only
    while it runs streamed or background responses), and a cancel checks for the end."""
    log_level: str = "info"
    workspace: str | None = None
    """Working directory for server-side tools (default: the current directory)."""

    @field_validator("store")
    @classmethod
    def _store_url(cls, value: str) -> str:
        try:
            normalise_url(value)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        return value


class GatewayConfig(BaseModel):
    """The whole configuration file."""

    model_config = ConfigDict(extra="forbid")

    server: ServerConfig = Field(default_factory=ServerConfig)
    models: dict[str, str | ModelEntry] = Field(default_factory=dict)
    """Aliases to ``"provider:model"`` strings or inline tables."""
    toolsets: dict[str, str] = Field(default_factory=dict)
    """Toolset names to import paths ``"pkg.module:attr"`` (a list of tools or a toolset)."""


def _env_value(raw: str) -> Any:
    text = raw.strip()
    if text[:1] in "{[":
        try:
            return json.loads(text)
        except ValueError:
            return raw
    return raw


def env_overrides(environ: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """``AGENTLOOP_<SECTION>__<KEY>`` variables as nested tables."""
    out: dict[str, dict[str, Any]] = {}
    for name, raw in environ.items():
        if not name.startswith(ENV_PREFIX) or "__" not in name:
            continue
        section, _, key = name[len(ENV_PREFIX) :].partition("__")
        section = section.lower()
        if section not in SECTIONS or not key:
            continue
        key = key.lower() if section == "server" else key
        out.setdefault(section, {})[key] = _env_value(raw)
    return out


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _format_errors(exc: ValidationError, source: str) -> str:
    lines = [f"invalid configuration ({source}):"]
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"])
        lines.append(f"  {where}: {err['msg']}")
    return "\n".join(lines)


def load_config(
    path: str | Path | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> GatewayConfig:
    """Read the config file (if any; ``agentloop.toml`` in the current directory by default),
    apply environment variables and then ``overrides`` (e.g. ``{"server": {"port": 9000}}``)."""
    env = os.environ if environ is None else environ
    if path is None:
        path = env.get(ENV_PREFIX + "CONFIG") or None
        candidate = Path(path) if path else Path("agentloop.toml")
        explicit = path is not None
    else:
        candidate, explicit = Path(path), True
    data: dict[str, Any] = {}
    if candidate.is_file():
        try:
            data = tomllib.loads(candidate.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{candidate}: not valid TOML: {exc}") from None
    elif explicit:
        raise ConfigError(f"config file {candidate} does not exist")
    data = _merge(data, env_overrides(env))
    if overrides:
        data = _merge(data, overrides)
    try:
        return GatewayConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_errors(exc, str(candidate))) from None
