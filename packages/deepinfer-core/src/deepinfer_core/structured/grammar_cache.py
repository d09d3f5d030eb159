# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: DeepInfer contributors
"""GrammarCache: compiled grammars keyed by (kind, spec), compiled in a thread pool."""

from __future__ import annotations

import collections
import concurrent.futures
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from deepinfer_core.structured.params import StructuredOutputs

T = TypeVar("T")


class GrammarCache(Generic[T]):
    """Compiles each distinct spec once, off the caller's thread, and keeps the last results.

    A spec's key is `StructuredOutputs.key()`. Failures are cached like results (the same spec
    fails the same way); a compile still running when its caller times out keeps running and
    is reused by later requests for the same key. The least recently used entries beyond
    `max_entries` are dropped.

    Args:
        compile_fn: spec -> compiled grammar; raises ValueError for a spec it cannot handle.
        max_workers: compile threads.
        max_entries: most cached keys.
    """

    def __init__(self, compile_fn: Callable[[StructuredOutputs], T], max_workers: int = 2,
                 max_entries: int = 256) -> None:
        if max_workers < 1 or max_entries < 1:
            raise ValueError(f"max_workers and max_entries must be >= 1, got {max_workers}, {max_entries}")
        self._compile = compile_fn
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers, thread_name_prefix="deepinfer-grammar")
        self._entries: collections.OrderedDict[tuple[str, str], concurrent.futures.Future[T]] = (
            collections.OrderedDict())
        self._max_entries = max_entries
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def submit(self, spec: StructuredOutputs) -> concurrent.futures.Future[T]:
        """The future of `spec`'s compiled grammar (started now unless cached)."""
        key = spec.key()
        with self._lock:
            future = self._entries.get(key)
            if future is None:
                future = self._entries[key] = self._pool.submit(self._compile, spec)
                while len(self._entries) > self._max_entries:
                    self._entries.popitem(last=False)
            else:
                self._entries.move_to_end(key)
            return future

    def get(self, spec: StructuredOutputs, timeout_s: float) -> T:
        """The compiled grammar, waiting at most `timeout_s` seconds.

        Raises:
            ValueError: the spec cannot be compiled, or compiling took longer than `timeout_s`
                (the message starts with the field name, e.g. "regex: ...").
        """
        return result_of(self.submit(spec), spec.kind, timeout_s)

    def close(self) -> None:
        """Stops accepting work; running compiles finish in the background."""
        self._pool.shutdown(wait=False, cancel_futures=True)


def result_of(future: concurrent.futures.Future[T], kind: str, timeout_s: float | None = 0.0) -> T:
    """The future's grammar, or a ValueError naming `kind` (compile error, or not done in time)."""
    try:
        return future.result(timeout=timeout_s)
    except concurrent.futures.TimeoutError:
        raise ValueError(f"{kind}: grammar compilation did not finish within {timeout_s:g} s") from None
    except ValueError:
        raise
    except Exception as exc:  # noqa: BLE001 - a backend crash fails this request only
        raise ValueError(f"{kind}: grammar compilation failed: {type(exc).__name__}: {exc}") from None
