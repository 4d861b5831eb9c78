"""The tool result cache: TTL + LRU, invalidated by writes to overlapping paths."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from agentloop.run.paths import overlap

_first = itemgetter(0)


@dataclass(frozen=True, kw_only=True, slots=True)
class _Entry:
    output: str
    paths: frozenset[str]
    expires: float


def _canonical(value: Any) -> Any:
    """Objects as ``(key, value)`` pairs sorted by key, at every depth."""
    if isinstance(value, dict):
        return sorted([(str(k), _canonical(v)) for k, v in value.items()], key=_first)
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return value


def cache_key(tool_name: str, arguments: Mapping[str, Any]) -> str:
    """Tool name plus a canonical text of the arguments (key order does not matter, at any
    depth). Arguments come from parsed JSON, whose values ``repr`` tells apart (``1``, ``1.0``,
    ``True`` and ``'1'`` all differ). Flat arguments, the common case, skip the recursive walk.
    """
    items = sorted(arguments.items(), key=_first)
    for _, value in items:
        if isinstance(value, dict | list | tuple):
            return f"{tool_name}\x00{_canonical(arguments)!r}"
    return f"{tool_name}\x00{items!r}"


class ResultCache:
    """Successful outputs of cacheable calls, keyed by tool and canonical arguments.

    A writing call invalidates every entry whose paths overlap its own; a writing call that
    declares no paths clears everything, since it might have changed anything.
    """

    def __init__(self, max_entries: int = 1024, clock: Callable[[], float] = time.monotonic):
        self.max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[str, _Entry] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> str | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry.expires <= self._clock():
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return entry.output

    def put(self, key: str, output: str, *, paths: frozenset[str], ttl: float) -> None:
        if ttl <= 0:
            return
        self._entries[key] = _Entry(output=output, paths=paths, expires=self._clock() + ttl)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def invalidate(self, paths: frozenset[str]) -> None:
        """Forget entries touching ``paths``; an empty set (a write anywhere) clears all."""
        if not paths:
            self._entries.clear()
            return
        stale = [k for k, e in self._entries.items() if e.paths and overlap(e.paths, paths)]
        for key in stale:
            del self._entries[key]

    def clear(self) -> None:
        self._entries.clear()
