"""``make demo``'s gateway part runs offline end to end."""

from __future__ import annotations

import pytest

from agentloop.gateway.demo import run_gateway_demo


def test_gateway_demo_runs(capsys: pytest.CaptureFixture[str]) -> None:
    run_gateway_demo()
    out = " ".join(capsys.readouterr().out.split())  # rich wraps lines at the terminal width
    assert out.count("response.completed") == 2
    assert "book_table" in out and "Booked a table for 5 in Tokyo" in out
