"""Configuration (file, AGENTLOOP_* environment, flags) and the serve/keys commands."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentloop.cli import app as cli
from agentloop.errors import ConfigError
from agentloop.gateway.config import ModelEntry, load_config
from agentloop.gateway.routing import ModelRouter
from agentloop.gateway.scripted import ScriptedBackend
from agentloop.gateway.tooling import import_toolset
from agentloop.gateway.wire import ApiError

TOML = """
[server]
port = 9001
client_tools_status = "requires_action"

[models]
fast = "scripted"
local = { model = "ollama:llama3.2", base_url = "http://127.0.0.1:11434", context_window = 8192 }

[toolsets]
demo = "agentloop.gateway.demo_tools:TOOLS"
"""


def test_file_then_environment_then_overrides(tmp_path: Path) -> None:
    path = tmp_path / "agentloop.toml"
    path.write_text(TOML)
    env = {
        "AGENTLOOP_SERVER__PORT": "9002",
        "AGENTLOOP_SERVER__STORE": "postgresql://u@db/agentloop",
        "AGENTLOOP_MODELS__other": '{"model": "openai:gpt-4.1-mini", "api_key_env": "KEY"}',
        "AGENTLOOP_TOOLSETS__more": "pkg.mod:tools",
        "AGENTLOOP_UNRELATED": "x",
    }
    cfg = load_config(path, environ=env, overrides={"server": {"host": "::1"}})
    assert cfg.server.port == 9002 and cfg.server.host == "::1"
    assert cfg.server.store == "postgresql://u@db/agentloop"
    assert cfg.server.client_tools_status == "requires_action"
    assert cfg.models["fast"] == "scripted"
    local = cfg.models["local"]
    assert isinstance(local, ModelEntry) and local.context_window == 8192
    assert isinstance(cfg.models["other"], ModelEntry)
    assert cfg.toolsets == {"demo": "agentloop.gateway.demo_tools:TOOLS", "more": "pkg.mod:tools"}


def test_config_errors_are_clear(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[server]\nport = 'eighty'\nmystery = 1\n")
    with pytest.raises(ConfigError) as err:
        load_config(bad, environ={})
    assert "server.port" in str(err.value) and "server.mystery" in str(err.value)
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "missing.toml", environ={})
    with pytest.raises(ConfigError, match="not supported"):
        load_config(None, environ={"AGENTLOOP_SERVER__STORE": "mysql://x"})
    (tmp_path / "broken.toml").write_text("[server\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(tmp_path / "broken.toml", environ={})


def test_api_key_env_is_resolved(monkeypatch: pytest.MonkeyPatch) -> None:
    entry = ModelEntry(model="openai:x", base_url="http://h", api_key_env="AL_TEST_KEY")
    monkeypatch.setenv("AL_TEST_KEY", "sk-1")
    assert entry.resolve_options() == {"base_url": "http://h", "api_key": "sk-1"}
    monkeypatch.delenv("AL_TEST_KEY")
    with pytest.raises(ConfigError, match="AL_TEST_KEY"):
        entry.resolve_options()


def test_model_routing(tmp_path: Path) -> None:
    path = tmp_path / "agentloop.toml"
    path.write_text(TOML)
    router = ModelRouter(load_config(path, environ={}))
    assert isinstance(router.get("fast"), ScriptedBackend)
    assert router.get("scripted") is router.get("scripted")
    assert "local" in router.names()
    with pytest.raises(ApiError) as err:
        router.get("gpt-unknown")
    assert err.value.status == 400 and err.value.param == "model"
    assert "gpt-unknown" in err.value.message


def test_toolsets_import() -> None:
    assert [t.name for t in import_toolset("agentloop.gateway.demo_tools:TOOLS")] == [
        "get_weather",
        "add",
        "lookup",
        "write_note",
    ]
    assert [t.name for t in import_toolset("agentloop.gateway.demo_tools:add")] == ["add"]
    for bad in ("no_colon", "agentloop.nope:x", "agentloop.gateway.demo_tools:missing"):
        with pytest.raises(ConfigError):
            import_toolset(bad)


def test_keys_commands(tmp_path: Path) -> None:
    runner = CliRunner()
    store = ["--store", f"sqlite:///{tmp_path / 'keys.db'}"]
    created = runner.invoke(cli, ["keys", "create", "--tenant", "acme", "--name", "ci", *store])
    assert created.exit_code == 0, created.output
    key_id = created.output.split()[2]
    secret = created.output.strip().splitlines()[-1]
    assert secret.startswith("al-")
    listed = runner.invoke(cli, ["keys", "list", *store])
    assert listed.exit_code == 0 and "acme" in listed.output and secret not in listed.output
    revoked = runner.invoke(cli, ["keys", "revoke", key_id, *store])
    assert revoked.exit_code == 0
    again = runner.invoke(cli, ["keys", "revoke", key_id, *store])
    assert again.exit_code == 1


def test_serve_refuses_a_public_address_without_keys(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["serve", "--host", "0.0.0.0", "--store", f"sqlite:///{tmp_path / 's.db'}"]
    )
    assert result.exit_code == 1
    assert "refusing to listen on 0.0.0.0" in result.output


def test_logs_are_json_lines_with_extra_fields(capsys: pytest.CaptureFixture[str]) -> None:
    import json
    import logging

    from agentloop.gateway import logs

    logs.configure("info")
    try:
        logging.getLogger("agentloop.audit").info(
            "tool add allowed/success", extra={"tool": "add", "tenant_id": "t1"}
        )
        line = capsys.readouterr().err.strip().splitlines()[-1]
        record = json.loads(line)
        assert record["message"] == "tool add allowed/success"
        assert record["tool"] == "add" and record["tenant_id"] == "t1"
        assert record["logger"] == "agentloop.audit" and record["level"] == "info"
    finally:
        root = logging.getLogger("agentloop")
        root.handlers.clear()
        root.propagate = True
        root.setLevel(logging.NOTSET)
