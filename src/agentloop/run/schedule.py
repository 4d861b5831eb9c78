"""Conflict-aware scheduling of the calls of one turn.

Two calls conflict when at least one of them writes and their path sets overlap, or when a
writing call declares no paths (it is a barrier: it might touch anything). Conflicting calls run
in the order the model gave them; everything else runs concurrently.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agentloop.run.paths import overlap


@dataclass(frozen=True, kw_only=True, slots=True)
class Access:
    """What one call touches: its normalised paths and whether it writes."""

    writes: bool
    paths: frozenset[str]


def conflicts(a: Access, b: Access) -> bool:
    if not (a.writes or b.writes):
        return False
    if (a.writes and not a.paths) or (b.writes and not b.paths):
        return True
    return overlap(a.paths, b.paths)


def dependencies(accesses: Sequence[Access], *, parallel: bool = True) -> list[tuple[int, ...]]:
    """For each call, the indexes of earlier calls it must wait for.

    With ``parallel=False`` each call waits for the one before it.
    """
    if not parallel:
        return [((i - 1,) if i else ()) for i in range(len(accesses))]
    return [
        tuple(j for j in range(i) if conflicts(accesses[j], accesses[i]))
        for i in range(len(accesses))
    ]
