"""Memo dicts of sub-results shared by the layouts of one search point.

A memo belongs to layouts of one model on one cluster with one training setup (all
scenario keys equal but the parallelism and the micro batch); a key names the layout
fields its value depends on. The engine owns the memo
(:func:`simulator.engine.context.memoised`); lower layers take one as an optional argument
and, without it, compute every value anew.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def remembered(memo: dict | None, key: tuple, compute: Callable[[], T]) -> T:
    """``compute()``, kept in ``memo`` under ``key``; computed every time without a memo.
    Values are shared, never modified."""
    if memo is None:
        return compute()
    found = memo.get(key)
    if found is None:
        found = memo[key] = compute()
    return found
