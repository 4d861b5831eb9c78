"""Path normalisation and overlap, shared by the scheduler and the result cache."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def normalise(path: str, workspace: str) -> str:
    """Absolute, normalised path (``a/./b/../c`` → ``<workspace>/a/c``); no filesystem access."""
    joined = path if os.path.isabs(path) else os.path.join(workspace, path)
    return os.path.normpath(joined)


def call_paths(
    arguments: Mapping[str, Any], path_args: Sequence[str], workspace: str
) -> frozenset[str]:
    """The normalised paths named by a call's path arguments (strings or lists of strings)."""
    if not path_args:
        return frozenset()
    out: set[str] = set()
    for name in path_args:
        value = arguments.get(name)
        if isinstance(value, str) and value:
            out.add(normalise(value, workspace))
        elif isinstance(value, list | tuple):
            out.update(normalise(v, workspace) for v in value if isinstance(v, str) and v)
    return frozenset(out)


def _inside(a: str, b: str) -> bool:
    return a == b or a.startswith(b.rstrip(os.sep) + os.sep)


def overlap(a: Iterable[str], b: Iterable[str]) -> bool:
    """True when some path of ``a`` equals, contains or is inside some path of ``b``."""
    bs = list(b)
    return any(_inside(x, y) or _inside(y, x) for x in a for y in bs)
