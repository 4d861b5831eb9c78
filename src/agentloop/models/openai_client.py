"""Building the ``openai.AsyncOpenAI`` client shared by both OpenAI adapters.

Keys come from ``OPENAI_API_KEY`` and the endpoint from ``base_url`` or ``OPENAI_BASE_URL``, so
the same adapter talks to OpenAI and to OpenAI-compatible servers (vLLM, Ollama's /v1, LM Studio,
Groq, Together, OpenRouter). Local servers need no key: with a custom endpoint a placeholder key
is used. The SDK's own retries are turned off; agentloop's retry policy does the counting.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Set
from typing import Any
from urllib.parse import urlsplit

import httpx2
import openai

from agentloop.errors import ConfigError
from agentloop.models.base import Model
from agentloop.models.retry import RetryPolicy, Sleep

__all__ = [
    "PLACEHOLDER_API_KEY",
    "OpenAIModelBase",
    "make_client",
    "provider_label",
    "split_body",
]

PLACEHOLDER_API_KEY = "not-needed"
"""Sent as the key to custom endpoints when no key is configured (local servers ignore it)."""


def make_client(
    *,
    client: openai.AsyncOpenAI | None,
    api_key: str | None,
    base_url: str | None,
    organization: str | None,
    timeout: float | None,
    default_headers: Mapping[str, str] | None,
    http_client: httpx2.AsyncClient | None,
) -> openai.AsyncOpenAI:
    """The client to use: the given one (with SDK retries off) or a new one."""
    if client is not None:
        return client.with_options(max_retries=0) if client.max_retries else client
    base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
    key = api_key or os.environ.get("OPENAI_API_KEY") or None
    if key is None:
        if base_url is None:
            raise ConfigError(
                "no OpenAI API key: set the OPENAI_API_KEY environment variable or pass "
                "api_key=...; for a local OpenAI-compatible server pass base_url=... "
                "(or set OPENAI_BASE_URL)"
            )
        key = PLACEHOLDER_API_KEY
    return openai.AsyncOpenAI(
        api_key=key,
        base_url=base_url,
        organization=organization,
        timeout=timeout if timeout is not None else openai.NOT_GIVEN,
        max_retries=0,
        default_headers=dict(default_headers) if default_headers else None,
        http_client=http_client,
    )


def provider_label(client: openai.AsyncOpenAI) -> str:
    """``"OpenAI"``, or the host of a custom endpoint, for error messages."""
    url = str(client.base_url)
    host = urlsplit(url).hostname or url
    return "OpenAI" if host == "api.openai.com" else f"OpenAI-compatible server {host}"


def split_body(body: Mapping[str, Any], known: Set[str]) -> dict[str, Any]:
    """``create()`` keyword arguments for a JSON body: the SDK's known parameters as such, the
    rest (``settings.extra`` keys a compatible server understands) as ``extra_body``."""
    kwargs = {k: v for k, v in body.items() if k in known}
    extra = {k: v for k, v in body.items() if k not in known}
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


class OpenAIModelBase(Model):
    """What both OpenAI adapters share: the client, retries, strictness and clean-up."""

    prefix = "openai"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        organization: str | None = None,
        client: openai.AsyncOpenAI | None = None,
        retry: RetryPolicy | None = None,
        strict_tools: bool = False,
        timeout: float | None = None,
        default_headers: Mapping[str, str] | None = None,
        context_window: int | None = None,
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        self.model_name = model
        self.name = f"{self.prefix}:{model}"
        self.client = make_client(
            client=client,
            api_key=api_key,
            base_url=base_url,
            organization=organization,
            timeout=timeout,
            default_headers=default_headers,
            http_client=http_client,
        )
        self._owns_client = client is None and http_client is None
        self.provider = provider_label(self.client)
        self.retry = retry or RetryPolicy()
        self.strict_tools = strict_tools
        self.context_window = context_window
        self.sleep: Sleep = asyncio.sleep

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model_name!r}, provider={self.provider!r})"

    async def aclose(self) -> None:
        if self._owns_client:  # a client or http_client the caller gave stays theirs
            await self.client.close()
