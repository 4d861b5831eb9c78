"""Authentication and tenancy.

API keys (stored as SHA-256 hashes) map to tenants. With no active keys and a loopback bind,
the gateway runs in local single-user mode: every request belongs to the ``local`` tenant,
whatever bearer token it carries. Bound elsewhere with no keys, it refuses to start.
"""

from __future__ import annotations

import ipaddress
import time

from agentloop.errors import ConfigError
from agentloop.gateway.runner import Principal
from agentloop.gateway.wire import ApiError
from agentloop.store import Store

LOCAL_TENANT = "local"
_KEYS_TTL = 2.0


def is_loopback(host: str) -> bool:
    if host in ("localhost", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def refusal(host: str, has_keys: bool) -> str | None:
    """Why the server must not start on ``host``, or None."""
    if has_keys or is_loopback(host):
        return None
    return (
        f"refusing to listen on {host} without API keys: anyone who can reach it could use "
        "your models and tools. Create a key first (agentloop keys create --tenant NAME) or "
        "bind to 127.0.0.1."
    )


class Authenticator:
    """Resolves a request's ``Authorization: Bearer`` header to a :class:`Principal`."""

    def __init__(self, store: Store, *, host: str, local_tenant_id: str) -> None:
        self.store = store
        self.loopback = is_loopback(host)
        self.local = Principal(tenant_id=local_tenant_id)
        self._keys_checked = 0.0
        self._keys = True

    async def check_startup(self, host: str) -> None:
        message = refusal(host, await self.store.has_active_keys())
        if message:
            raise ConfigError(message)

    async def _have_keys(self) -> bool:
        now = time.monotonic()
        if now - self._keys_checked > _KEYS_TTL:
            self._keys = await self.store.has_active_keys()
            self._keys_checked = now
        return self._keys

    async def __call__(self, authorization: str | None) -> Principal:
        if self.loopback and not await self._have_keys():
            return self.local
        token = None
        if authorization:
            scheme, _, value = authorization.partition(" ")
            if scheme.lower() == "bearer" and value.strip():
                token = value.strip()
        if token is None:
            raise ApiError(
                401, "Missing API key: send 'Authorization: Bearer <key>'.", code="missing_api_key"
            )
        key = await self.store.authenticate(token)
        if key is None:
            raise ApiError(401, "Incorrect or revoked API key.", code="invalid_api_key")
        return Principal(tenant_id=key.tenant_id, key_id=key.id)
