"""What a running tool may know about its run: :class:`ToolContext`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentloop.run.policy import Policy


def _ignore_change(path: str, lines_changed: int) -> None:
    return None


@dataclass(frozen=True, kw_only=True)
class ToolContext:
    """Injected into a tool that declares a parameter annotated ``ToolContext``.

    It never appears in the tool's schema. ``workspace`` is the directory tools should work in;
    ``policy`` carries the run's allowlists; ``deps`` is whatever the caller passed to ``run``.
    Writing tools report what they changed with :meth:`record_change` so that the
    ``max_files_modified`` and ``max_lines_changed`` budgets can be enforced.
    """

    workspace: Path
    run_id: str
    call_id: str
    tool_name: str
    policy: Policy
    deps: Any = None
    _on_change: Callable[[str, int], None] = field(default=_ignore_change, repr=False)

    def record_change(self, path: str, lines_changed: int) -> None:
        """Report that this call modified ``path`` by ``lines_changed`` lines."""
        self._on_change(path, max(0, int(lines_changed)))

    def resolve(self, path: str) -> Path:
        """``path`` made absolute against the workspace."""
        candidate = Path(path)
        return candidate if candidate.is_absolute() else self.workspace / candidate
