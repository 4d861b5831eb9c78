"""`make demo` runs the scripted scenario end to end."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentloop.demo import run_demo

pytestmark = pytest.mark.anyio


async def test_demo_scenario(tmp_path: Path) -> None:
    result = await run_demo(tmp_path)
    assert result.status == "completed"
    assert [a.cached for a in result.audit].count(True) == 1
    assert result.audit[-1].decision == "approved"
    assert (tmp_path / "todo.txt").read_text() == "- ship the demo (done)\n"
