"""One bounded, thread-safe LRU cache for everything that remembers results: query vectors, retrieval
results, query rewrites and HyDE passages.

Streamlit serves every browser session from threads of one process, so every cache shared between
requests must be safe to use from several threads at once and must not grow without bound.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable, Generic, Hashable, TypeVar

V = TypeVar("V")


class LRUCache(Generic[V]):
    """At most ``size`` entries; the least recently used one is dropped first.

    Args:
        size: How many entries to keep; 0 keeps nothing (every lookup misses).
    """

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError("size must be >= 0")
        self.size = size
        self._items: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        """The cached value (now the most recently used), or None."""
        with self._lock:
            if key not in self._items:
                return None
            self._items.move_to_end(key)
            return self._items[key]

    def put(self, key: Hashable, value: V) -> None:
        if self.size == 0:
            return
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def get_or_compute(self, key: Hashable, compute: Callable[[], V]) -> V:
        """The cached value, or ``compute()`` stored and returned.

        ``compute`` runs outside the lock, so two threads missing on one key may both compute it; the
        values are equal, and a slow computation never blocks other keys.
        """
        hit = self.get(key)
        if hit is not None:
            return hit
        value = compute()
        self.put(key, value)
        return value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._items
