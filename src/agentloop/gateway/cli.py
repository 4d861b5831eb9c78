"""``agentloop serve`` and ``agentloop keys create|list|revoke``.

Registered on the main command by :func:`register`; heavy imports happen inside the commands so
the rest of the CLI stays fast.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import typer

keys_app = typer.Typer(
    help="Manage API keys (stored hashed) and their tenants.", no_args_is_help=True
)

_CONFIG = typer.Option(None, "--config", help="Path to agentloop.toml (default: ./agentloop.toml).")
_STORE = typer.Option(None, "--store", help="sqlite:///path.db or postgresql://user@host/db")


def _config(config: Path | None, overrides: dict[str, Any]) -> Any:
    from agentloop.errors import ConfigError
    from agentloop.gateway.config import load_config

    server = {k: v for k, v in overrides.items() if v is not None}
    try:
        return load_config(config, overrides={"server": server} if server else None)
    except ConfigError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        raise typer.Exit(2) from None


def serve(
    host: str = typer.Option(None, "--host", help="Address to bind (default 127.0.0.1)."),
    port: int = typer.Option(None, "--port", help="Port (default 8080)."),
    store: str = _STORE,
    config: Path = _CONFIG,
    client_tools_status: str = typer.Option(
        None,
        "--client-tools-status",
        help="Status of responses that stop for client tools: completed (default) or "
        "requires_action.",
    ),
    log_level: str = typer.Option(None, "--log-level", help="debug, info, warning, error"),
) -> None:
    """Run the Open Responses gateway (HTTP + SSE) on uvicorn."""
    import uvicorn

    from agentloop.errors import ConfigError
    from agentloop.gateway import logs
    from agentloop.gateway.app import create_app
    from agentloop.gateway.auth import refusal
    from agentloop.store import Store

    cfg = _config(
        config,
        {"host": host, "port": port, "store": store, "client_tools_status": client_tools_status,
         "log_level": log_level},
    )  # fmt: skip
    logs.configure(cfg.server.log_level)

    async def preflight() -> str | None:
        opened = await Store.open(cfg.server.store)
        try:
            return refusal(cfg.server.host, await opened.has_active_keys())
        finally:
            await opened.aclose()

    try:
        problem = asyncio.run(preflight())
        app = create_app(cfg)
    except ConfigError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        raise typer.Exit(2) from None
    if problem:
        typer.secho(f"error: {problem}", fg="red", err=True)
        raise typer.Exit(1)
    typer.echo(
        f"agentloop gateway on http://{cfg.server.host}:{cfg.server.port}/v1 "
        f"(store: {cfg.server.store})",
        err=True,
    )
    uvicorn.run(
        app,
        host=cfg.server.host,
        port=cfg.server.port,
        log_level=cfg.server.log_level.lower(),
        access_log=False,
    )


def _run(config: Path | None, store: str | None, action: Any) -> Any:
    from agentloop.store import Store

    cfg = _config(config, {"store": store})

    async def go() -> Any:
        opened = await Store.open(cfg.server.store)
        try:
            return await action(opened)
        finally:
            await opened.aclose()

    return asyncio.run(go())


@keys_app.command("create")
def keys_create(
    tenant: str = typer.Option(..., "--tenant", help="Tenant the key belongs to (created if new)."),
    name: str = typer.Option("default", "--name", help="A label for the key."),
    store: str = _STORE,
    config: Path = _CONFIG,
) -> None:
    """Create an API key. The secret is printed once; only its hash is stored."""
    record, secret = _run(config, store, lambda s: s.create_key(tenant, name))
    typer.echo(f"created key {record.id} for tenant {tenant!r} ({record.tenant_id})")
    typer.echo(secret)


@keys_app.command("list")
def keys_list(store: str = _STORE, config: Path = _CONFIG) -> None:
    """List API keys (never their secrets)."""
    import time

    from rich.console import Console
    from rich.table import Table

    keys = _run(config, store, lambda s: s.list_keys())
    table = Table("id", "tenant", "name", "prefix", "created", "status")
    for key in keys:
        created = time.strftime("%Y-%m-%d %H:%M", time.localtime(key.created_at))
        status = "active" if key.revoked_at is None else "revoked"
        table.add_row(key.id, key.tenant_name, key.name, key.prefix + "…", created, status)
    Console().print(table)


@keys_app.command("revoke")
def keys_revoke(
    key_id: str = typer.Argument(..., help="The key's id (see 'keys list')."),
    store: str = _STORE,
    config: Path = _CONFIG,
) -> None:
    """Revoke an API key; requests using it get 401 from then on."""
    if not _run(config, store, lambda s: s.revoke_key(key_id)):
        typer.secho(f"error: no active key {key_id!r}", fg="red", err=True)
        raise typer.Exit(1)
    typer.echo(f"revoked {key_id}")


def register(app: typer.Typer) -> None:
    """Add ``serve`` and ``keys`` to the ``agentloop`` command."""
    app.command("serve")(serve)
    app.add_typer(keys_app, name="keys")
